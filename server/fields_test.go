package server

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/kubernetes/pkg/registry/batch/job"
	"k8s.io/kubernetes/pkg/registry/certificates/certificates"
	"k8s.io/kubernetes/pkg/registry/core/configmap"
	eventregistry "k8s.io/kubernetes/pkg/registry/core/event"
	"k8s.io/kubernetes/pkg/registry/core/namespace"
	"k8s.io/kubernetes/pkg/registry/core/node"
	"k8s.io/kubernetes/pkg/registry/core/pod"
	"k8s.io/kubernetes/pkg/registry/core/replicationcontroller"
	"k8s.io/kubernetes/pkg/registry/core/secret"
	"k8s.io/kubernetes/pkg/registry/core/service"
	"k8s.io/kubernetes/pkg/registry/resource/resourceslice"

	"github.com/listwatch/listwatch/object"
)

// FuzzSelectorsAsKube: every label and field selector kube's parsers
// accept, the library's parser accepts in kube's canonical form, and the
// two match the same label and field sets (predicate relies on both). The
// field selector's fields are those predicate lets through kube's field
// label conversion: names of selectable fields, never empty or spaced. The
// sets are made of the keys and values the selectors name, plus the
// fuzzer's own, so that they meet the selectors' terms.
func FuzzSelectorsAsKube(f *testing.F) {
	for _, c := range [][3]string{
		{"a=b,c!=d", "metadata.name=x,spec.nodeName!=y", "a=b,c=d"},
		{"a in (x,y),!b,c", `f=a\,b,g!=\=`, "a=x,c="},
		{"x/y.z notin (), k>3, k<10", "f==v", "k=5,x/y.z=q"},
		{"a==b,a!=c, a", "f=,g!=", "a=b"},
		{"", "", ""},
	} {
		f.Add(c[0], c[1], c[2])
	}
	f.Fuzz(func(t *testing.T, labelSel, fieldSel, set string) {
		kl, lerr := labels.Parse(labelSel)
		kf, ferr := fields.ParseSelector(fieldSel)
		var sets []map[string]string
		base := map[string]string{}
		for _, kv := range strings.Split(set, ",") {
			k, v, _ := strings.Cut(kv, "=")
			base[k] = v
		}
		sets = append(sets, base, map[string]string{})
		if lerr == nil {
			reqs, _ := kl.Requirements()
			for _, r := range reqs {
				for _, v := range r.Values().UnsortedList() {
					sets = append(sets, map[string]string{r.Key(): v}, map[string]string{r.Key(): v + "1"})
				}
				sets = append(sets, map[string]string{r.Key(): ""})
			}
		}
		if ferr == nil {
			one := map[string]string{}
			for _, r := range kf.Requirements() {
				one[r.Field] = r.Value
				sets = append(sets, map[string]string{r.Field: r.Value})
			}
			sets = append(sets, one)
		}
		if lerr == nil {
			ours, err := object.ParseLabelSelector(kl.String())
			if err != nil {
				t.Fatalf("kube accepts label selector %q (%q), the library does not: %v", labelSel, kl.String(), err)
			}
			for _, s := range sets {
				if got, want := ours.Matches(s), kl.Matches(labels.Set(s)); got != want {
					t.Fatalf("label selector %q on %v: library %t, kube %t", kl.String(), s, got, want)
				}
			}
		}
		if ferr == nil && plainFields(kf) {
			ours, err := object.ParseFieldSelector(kf.String())
			if err != nil {
				t.Fatalf("kube accepts field selector %q (%q), the library does not: %v", fieldSel, kf.String(), err)
			}
			for _, s := range sets {
				if got, want := ours.MatchesSet(s), kf.Matches(fields.Set(s)); got != want {
					t.Fatalf("field selector %q on %v: library %t, kube %t", kf.String(), s, got, want)
				}
			}
		}
	})
}

// plainFields: every field s names could be a selectable field's name.
func plainFields(s fields.Selector) bool {
	for _, r := range s.Requirements() {
		if r.Field == "" || strings.ContainsAny(r.Field, `\,=!`) {
			return false
		}
		for _, c := range []byte(r.Field) {
			if c <= ' ' || c >= 0x7f {
				return false
			}
		}
	}
	return true
}

// TestSelectableFieldsAsKube: for each built-in whose objects kube selects
// on fields of their own, a stored object's field values as attrFunc reads
// them from its JSON are the values kube's GetAttrs gives the typed object
// (under the name kube's field label conversion maps each field to), both
// for an object without the fields (kube's "false" and "0" for a missing
// bool or number) and for one with each field set; and every field of
// kube's attributes that its conversion accepts is one the resource
// selects on. (ClusterTrustBundles' and PodCertificateRequests' attribute
// functions are not exported.)
func TestSelectableFieldsAsKube(t *testing.T) {
	kube := map[string]func(runtime.Object) (labels.Set, fields.Set, error){
		"/namespaces":             namespace.GetAttrs,
		"/secrets":                secret.GetAttrs,
		"/pods":                   pod.GetAttrs,
		"/events":                 eventregistry.GetAttrs,
		"events.k8s.io/events":    eventregistry.GetAttrs,
		"/nodes":                  node.GetAttrs,
		"/replicationcontrollers": replicationcontroller.GetAttrs,
		"/services":               service.GetAttrs,
		"/configmaps":             configmap.GetAttrs,
		"batch/jobs":              job.GetAttrs,
		"certificates.k8s.io/certificatesigningrequests": certificates.GetAttrs,
		"resource.k8s.io/resourceslices":                 resourceslice.GetAttrs,
	}
	seen := 0
	for _, r := range builtinResources() {
		getAttrs, ok := kube[r.group+"/"+r.plural]
		tk := r.typed()
		if !ok || tk == nil {
			continue
		}
		seen++
		t.Run(r.group+"/"+r.version+"/"+r.plural, func(t *testing.T) {
			for _, filled := range []bool{false, true} {
				ext, err := tk.scheme.New(tk.stored())
				if err != nil {
					t.Fatal(err)
				}
				m := ext.(metav1.Object)
				m.SetName("x")
				if r.namespaced {
					m.SetNamespace("ns")
				}
				if filled {
					i := 0
					for f, path := range r.fields {
						if len(path) > 0 && !setPath(reflect.ValueOf(ext).Elem(), path, i) {
							t.Fatalf("%s: no field at %v in %T", f, path, ext)
						}
						i++
					}
				}
				tk.scheme.Default(ext)
				b, err := json.Marshal(ext)
				if err != nil {
					t.Fatal(err)
				}
				_, ours, err := attrFunc(r.fields, r.fieldAbsent)(b)
				if err != nil {
					t.Fatal(err)
				}
				internal, err := tk.scheme.New(tk.internal)
				if err != nil {
					t.Fatal(err)
				}
				if err := tk.scheme.Convert(ext, internal, nil); err != nil {
					t.Fatal(err)
				}
				_, theirs, err := getAttrs(internal)
				if err != nil {
					t.Fatal(err)
				}
				for f := range r.fields {
					k, _, err := tk.scheme.ConvertFieldLabel(tk.external, f, "")
					if err != nil {
						t.Fatalf("%s: selectable here, refused by kube: %v", f, err)
					}
					if ours[f] != theirs[k] {
						t.Errorf("filled=%t %s: %q here, kube's %s is %q (%s)", filled, f, ours[f], k, theirs[k], b)
					}
				}
				for k := range theirs {
					if k == "metadata.name" || k == "metadata.namespace" {
						continue
					}
					if to, _, err := tk.scheme.ConvertFieldLabel(tk.external, k, ""); err == nil && to == k {
						if _, ok := r.fields[k]; !ok {
							t.Errorf("kube selects %s on %s, this server does not", k, r.plural)
						}
					}
				}
			}
		})
	}
	if seen != len(kube) {
		t.Fatalf("%d of the %d resources found", seen, len(kube))
	}
}

// setPath sets the field of v (a struct) at the JSON path to a value of
// its type made from i: a string, true, or a number. It reports whether
// the path names a field of a kind it can set.
func setPath(v reflect.Value, path []string, i int) bool {
	for _, name := range path {
		for v.Kind() == reflect.Pointer {
			if v.IsNil() {
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		if v.Kind() != reflect.Struct {
			return false
		}
		found := false
		for j := 0; j < v.NumField(); j++ {
			tag, _, _ := strings.Cut(v.Type().Field(j).Tag.Get("json"), ",")
			if tag == name {
				v, found = v.Field(j), true
				break
			}
		}
		if !found {
			return false
		}
	}
	if v.Kind() == reflect.Pointer {
		v.Set(reflect.New(v.Type().Elem()))
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(fmt.Sprintf("v%d", i))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int32, reflect.Int64:
		v.SetInt(int64(7 + i))
	default:
		return false
	}
	return true
}
