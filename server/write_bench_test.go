package server

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// writeBenchKind is a kind BenchmarkWrite writes: path is its collection
// in the namespace bench, object(name, v) its body with v in a label (so
// every write changes it), patch(v) a patch of that label (strategic merge
// for a built-in kind, merge for a custom resource, which has no other).
type writeBenchKind struct {
	name, path string
	object     func(name string, v int) string
	patchType  string
}

const benchPodSpec = `"spec":{"containers":[{"name":"app","image":"registry.example/app:1.2.3",` +
	`"args":["--port=8080","--verbose"],"ports":[{"name":"http","containerPort":8080}],` +
	`"env":[{"name":"A","value":"1"},{"name":"B","value":"2"}],` +
	`"resources":{"requests":{"cpu":"100m","memory":"64Mi"},"limits":{"memory":"128Mi"}},` +
	`"readinessProbe":{"httpGet":{"path":"/healthz","port":8080}},` +
	`"volumeMounts":[{"name":"config","mountPath":"/etc/app"}]}],` +
	`"volumes":[{"name":"config","configMap":{"name":"app"}}]}`

var writeBenchKinds = []writeBenchKind{
	{name: "ConfigMap", path: "/api/v1/namespaces/bench/configmaps", patchType: "application/strategic-merge-patch+json",
		object: func(name string, v int) string {
			return fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"labels":{"app":"bench","v":"%d"}},"data":{"a":"1","b":"2"}}`, name, v)
		}},
	{name: "Pod", path: "/api/v1/namespaces/bench/pods", patchType: "application/strategic-merge-patch+json",
		object: func(name string, v int) string {
			return fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q,"labels":{"app":"bench","v":"%d"}},%s}`, name, v, benchPodSpec)
		}},
	{name: "Deployment", path: "/apis/apps/v1/namespaces/bench/deployments", patchType: "application/strategic-merge-patch+json",
		object: func(name string, v int) string {
			return fmt.Sprintf(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":%q,"labels":{"app":"bench","v":"%d"}},`+
				`"spec":{"replicas":3,"selector":{"matchLabels":{"app":"bench"}},"template":{"metadata":{"labels":{"app":"bench"}},%s}}}`,
				name, v, benchPodSpec)
		}},
	{name: "Gadget", path: benchGadgets, patchType: "application/merge-patch+json",
		object: func(name string, v int) string {
			return fmt.Sprintf(`{"apiVersion":"example.com/v1","kind":"Gadget","metadata":{"name":%q,"labels":{"app":"bench","v":"%d"}},"spec":%s}`,
				name, v, benchGadgetSpec)
		}},
}

// BenchmarkWrite writes ConfigMaps, Pods, Deployments and custom
// resources (gadgetSchema's) through the HTTP handler, one write at a
// time: creates of new objects, and updates (PUT, with the
// resourceVersion the last one answered, as a custom resource needs),
// patches and applies (force, one manager) of one object that change a
// label each time.
// cpu-µs/op is as in BenchmarkCreateConfigMap: the whole process's.
func BenchmarkWrite(b *testing.B) {
	e := newBenchEnv(b)
	do := func(method, path, contentType, body string, want int) (rv string) {
		req, err := http.NewRequest(method, e.url+path, strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Content-Type", contentType)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			b.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, msg)
		}
		var answer struct {
			Metadata struct{ ResourceVersion string }
		}
		_ = json.Unmarshal(msg, &answer)
		return answer.Metadata.ResourceVersion
	}
	const ctJSON = "application/json"
	do(http.MethodPost, crdPath, ctJSON, string(benchGadgetCRD(b, gadgetSchema)), http.StatusCreated)
	do(http.MethodPost, "/api/v1/namespaces", ctJSON, `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"bench"}}`, http.StatusCreated)
	for _, k := range writeBenchKinds {
		rv := do(http.MethodPost, k.path, ctJSON, k.object("w", 0), http.StatusCreated)
		v := 0
		writes := []struct {
			verb  string
			write func()
		}{
			{"create", func() { do(http.MethodPost, k.path, ctJSON, k.object(fmt.Sprintf("c-%d", v), v), http.StatusCreated) }},
			{"update", func() {
				body := strings.Replace(k.object("w", v), `"metadata":{`, `"metadata":{"resourceVersion":"`+rv+`",`, 1)
				rv = do(http.MethodPut, k.path+"/w", ctJSON, body, http.StatusOK)
			}},
			{"patch", func() {
				do(http.MethodPatch, k.path+"/w", k.patchType, fmt.Sprintf(`{"metadata":{"labels":{"v":"%d"}}}`, v), http.StatusOK)
			}},
			{"apply", func() {
				do(http.MethodPatch, k.path+"/w?fieldManager=bench&force=true", "application/apply-patch+yaml", k.object("w", v), http.StatusOK)
			}},
		}
		for _, w := range writes {
			b.Run(k.name+"/"+w.verb, func(b *testing.B) {
				b.ReportAllocs()
				start := cpuTime()
				for b.Loop() {
					v++
					w.write()
				}
				b.ReportMetric(float64((cpuTime()-start).Microseconds())/float64(b.N), "cpu-µs/op")
			})
		}
	}
}

// BenchmarkEncodeStored is encodeInto of a ConfigMap, a Pod and a
// Deployment (writeBenchKinds' objects, decoded and converted as a write
// has them), the last step of every write of a built-in kind: convert to
// the stored version, default (kube's read), encode.
func BenchmarkEncodeStored(b *testing.B) {
	for _, k := range writeBenchKinds[:3] {
		b.Run(k.name, func(b *testing.B) {
			d, err := decodeDoc([]byte(k.object("w", 1)))
			if err != nil {
				b.Fatal(err)
			}
			t := typedKinds[map[string]string{"ConfigMap": "/configmaps", "Pod": "/pods", "Deployment": "apps/deployments"}[k.name]]
			into, err := t.scheme.New(t.external)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := decodeJSONInto(t, d, d.encode(), into, false); err != nil {
				b.Fatal(err)
			}
			internal, err := t.internalOf(into)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := t.encodeInto(internal, &doc{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// benchStoredGadgetMeta is a custom resource's metadata as an update has
// it after mutating admission: the server's fields and managedFields.
const benchStoredGadgetMeta = `{"name":"w","namespace":"bench","uid":"0b6c1d2e-3f40-4a5b-8c6d-7e8f90a1b2c3",` +
	`"resourceVersion":"42","generation":3,"creationTimestamp":"2026-01-01T00:00:00Z","labels":{"app":"bench","v":"7"},` +
	`"managedFields":[{"manager":"bench","operation":"Apply","apiVersion":"example.com/v1","time":"2026-01-01T00:00:00Z",` +
	`"fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:labels":{"f:app":{},"f:v":{}}},"f:spec":{"f:name":{},"f:mode":{},` +
	`"f:replicas":{},"f:ratio":{},"f:when":{},"f:port":{},"f:tags":{},"f:ports":{},"f:labels":{"f:team":{}},"f:extra":{},"f:fixed":{}}}}]}`

// benchStoredGadgetMetaSorted is benchStoredGadgetMeta with the managed
// fields' members in the order of their names, as they are stored and as
// an apply leaves them.
const benchStoredGadgetMetaSorted = `{"name":"w","namespace":"bench","uid":"0b6c1d2e-3f40-4a5b-8c6d-7e8f90a1b2c3",` +
	`"resourceVersion":"42","generation":3,"creationTimestamp":"2026-01-01T00:00:00Z","labels":{"app":"bench","v":"7"},` +
	`"managedFields":[{"apiVersion":"example.com/v1","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:labels":{"f:app":{},"f:v":{}}},` +
	`"f:spec":{"f:extra":{},"f:fixed":{},"f:labels":{"f:team":{}},"f:mode":{},"f:name":{},"f:port":{},"f:ports":{},"f:ratio":{},` +
	`"f:replicas":{},"f:tags":{},"f:when":{}}},"manager":"bench","operation":"Apply","time":"2026-01-01T00:00:00Z"}]}`

// BenchmarkCoerceCustomMeta is coerceCustomMeta of a create's metadata
// as sent (a name and labels) and of an update's after admission, its
// managed fields as setManagedFields writes them and as stored.
func BenchmarkCoerceCustomMeta(b *testing.B) {
	for _, tc := range []struct{ name, meta string }{
		{"sent", `{"name":"w","labels":{"app":"bench","v":"7"}}`},
		{"admitted", benchStoredGadgetMeta},
		{"stored", benchStoredGadgetMetaSorted},
	} {
		b.Run(tc.name, func(b *testing.B) {
			d, err := decodeDoc([]byte(`{"apiVersion":"example.com/v1","kind":"Gadget","metadata":` + tc.meta + `,"spec":` + benchGadgetSpec + `}`))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				c := d.clone()
				coerceCustomMeta(c)
			}
		})
	}
}
