package patch

import (
	"reflect"
	"sort"
	"strings"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
)

// tagFacts lists, by JSON path, the patch metadata Kubernetes' struct tags
// give every field whose strategy can matter: reachable through objects, and
// through lists only when they merge (a replaced list never merges inside).
func tagFacts(t reflect.Type, prefix string, out map[string]Field, depth int) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || depth > 12 {
		return
	}
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		name, opts, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" && strings.Contains(opts, "inline") || sf.Anonymous && name == "" {
			tagFacts(sf.Type, prefix, out, depth+1)
			continue
		}
		path := prefix + "." + name
		strategy := sf.Tag.Get("patchStrategy")
		f := Field{
			Merge:      strings.Contains(strategy, "merge"),
			RetainKeys: strings.Contains(strategy, "retainKeys"),
			Replace:    strings.Contains(strategy, "replace"),
			MergeKey:   sf.Tag.Get("patchMergeKey"),
		}
		if f != (Field{}) {
			out[path] = f
		}
		ft := sf.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		switch ft.Kind() {
		case reflect.Struct:
			tagFacts(ft, path, out, depth+1)
		case reflect.Slice:
			if f.Merge {
				tagFacts(ft.Elem(), path+"[]", out, depth+1)
			}
		}
	}
}

// tableFacts lists the same facts from one of this package's tables.
func tableFacts(s Schema, prefix string, out map[string]Field) {
	fs, ok := s.(Fields)
	if !ok {
		return
	}
	for name, f := range fs {
		path := prefix + "." + name
		child := f.Schema
		f.Schema = nil
		if f != (Field{}) {
			out[path] = f
		}
		if child != nil {
			if f.Merge {
				tableFacts(child, path+"[]", out)
			} else {
				tableFacts(child, path, out)
			}
		}
	}
}

func TestBuiltinSchemasMatchKubernetesTags(t *testing.T) {
	kinds := []struct {
		group, kind string
		obj         any
	}{
		{"", "Pod", corev1.Pod{}},
		{"", "Service", corev1.Service{}},
		{"", "ServiceAccount", corev1.ServiceAccount{}},
		{"", "ConfigMap", corev1.ConfigMap{}},
		{"", "Secret", corev1.Secret{}},
		{"", "Namespace", corev1.Namespace{}},
		{"", "Event", corev1.Event{}},
		{"coordination.k8s.io", "Lease", coordinationv1.Lease{}},
	}
	for _, k := range kinds {
		want := map[string]Field{}
		tagFacts(reflect.TypeOf(k.obj), "", want, 0)
		s, ok := SchemaFor(k.group, k.kind)
		if !ok {
			t.Fatalf("no schema for %s", k.kind)
		}
		got := map[string]Field{}
		tableFacts(s, "", got)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: table and k8s.io/api tags differ\n table: %v\n tags:  %v", k.kind, facts(got), facts(want))
		}
	}
}

func facts(m map[string]Field) []string {
	var out []string
	for p, f := range m {
		out = append(out, p+"="+strings.TrimSpace(strings.Join([]string{
			map[bool]string{true: "merge"}[f.Merge], f.MergeKey,
			map[bool]string{true: "retainKeys"}[f.RetainKeys]}, " ")))
	}
	sort.Strings(out)
	return out
}
