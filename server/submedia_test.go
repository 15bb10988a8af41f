package server

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsyaml "sigs.k8s.io/yaml"
)

// TestSubresourceAnswersNegotiated: the objects and Statuses the
// subresources of built-in kinds answer with come in the media type the
// client negotiates, as kube's handlers encode them: a Scale (GET, PUT,
// PATCH), a TokenRequest, and the Success Status of an eviction or a
// binding are protobuf when protobuf is preferred, YAML when YAML is; a
// protobuf Scale is the JSON one's message in kube's envelope. (Side by
// side with kube: e2e TestKubeSubresourceMediaSameAsOurs.)
func TestSubresourceAnswersNegotiated(t *testing.T) {
	e := newEnv(t, withServiceAccountTokens(t))
	const ns = "/api/v1/namespaces/default"
	deployments := "/apis/apps/v1/namespaces/default/deployments"
	tmpl := map[string]any{
		"metadata": map[string]any{"labels": map[string]any{"app": "web"}},
		"spec":     map[string]any{"containers": []any{map[string]any{"name": "c", "image": "nginx"}}},
	}
	e.must(201, "POST", deployments, map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web"},
		"spec": map[string]any{"replicas": 1, "selector": map[string]any{"matchLabels": map[string]any{"app": "web"}}, "template": tmpl}})
	e.must(201, "POST", ns+"/serviceaccounts", map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "robot"}})
	for _, p := range []string{"evicted", "bound-1", "bound-2", "bound-3"} {
		e.must(201, "POST", ns+"/pods", podJSON(p, "", "c"))
	}

	const (
		proto       = "application/vnd.kubernetes.protobuf"
		protoFirst  = "application/vnd.kubernetes.protobuf, application/json;q=0.9"
		protoByQ    = "application/json;q=0.5, application/vnd.kubernetes.protobuf"
		yamlFirst   = "application/yaml;q=0.9, application/vnd.kubernetes.protobuf;q=0.8"
		contentType = "Content-Type"
	)
	scale := deployments + "/web/scale"
	for i, accept := range []string{proto, protoFirst, protoByQ} {
		for _, r := range []struct {
			method string
			body   any
			hdr    []string
		}{
			{"GET", nil, nil},
			{"PUT", map[string]any{"metadata": map[string]any{"name": "web"}, "spec": map[string]any{"replicas": 2 + i}}, nil},
			{"PATCH", `{"spec":{"replicas":7}}`, []string{contentType, mergeCT}},
		} {
			got := e.do(r.method, scale, r.body, append([]string{"Accept", accept}, r.hdr...)...)
			if got.code != 200 || got.hdr.Get(contentType) != proto {
				t.Errorf("%s scale [%s]: %d %s %q", r.method, accept, got.code, got.hdr.Get(contentType), got.body)
				continue
			}
			// The same Scale in JSON, encoded as kube encodes it.
			var s autoscalingv1.Scale
			if err := json.Unmarshal(e.do("GET", scale, nil).body, &s); err != nil {
				t.Fatal(err)
			}
			raw, err := s.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			if want := envelope("autoscaling/v1", "Scale", raw); !bytes.Equal(got.body, want) {
				t.Errorf("%s scale [%s]:\n got  %q\n want %q", r.method, accept, got.body, want)
			}
		}
	}
	got := e.do("GET", scale, nil, "Accept", yamlFirst)
	var y map[string]any
	if err := sigsyaml.Unmarshal(got.body, &y); err != nil || got.code != 200 || got.hdr.Get(contentType) != "application/yaml" || y["kind"] != "Scale" {
		t.Errorf("GET scale [%s]: %d %s %q", yamlFirst, got.code, got.hdr.Get(contentType), got.body)
	}

	// A TokenRequest, whatever the body's type.
	for _, accept := range []string{proto, protoByQ} {
		got := e.do("POST", ns+"/serviceaccounts/robot/token", `{"spec":{"audiences":["x"]}}`, "Accept", accept)
		obj, _, err := protobufCodec.Decode(got.body, nil, nil)
		tr, ok := obj.(*authenticationv1.TokenRequest)
		if got.code != 201 || got.hdr.Get(contentType) != proto || err != nil || !ok || tr.Status.Token == "" || tr.Name != "robot" {
			t.Errorf("token [%s]: %d %s %v %q", accept, got.code, got.hdr.Get(contentType), err, got.body)
		}
	}

	// Success Statuses: an eviction's (a dry run), a binding's.
	success := func(what string, got response, accept string) {
		t.Helper()
		var st metav1.Status
		if got.hdr.Get(contentType) == proto {
			if !bytes.HasPrefix(got.body, protoMagic) {
				t.Fatalf("%s [%s]: %q", what, accept, got.body)
			}
			if err := st.Unmarshal(unknownRaw(t, got.body[len(protoMagic):])); err != nil {
				t.Fatal(err)
			}
		} else if err := sigsyaml.Unmarshal(got.body, &st); err != nil {
			t.Fatal(err)
		}
		want := proto
		if accept == yamlFirst {
			want = "application/yaml"
		}
		if got.code != 201 || got.hdr.Get(contentType) != want || st.Status != "Success" || st.Code != 201 {
			t.Errorf("%s [%s]: %d %s %+v", what, accept, got.code, got.hdr.Get(contentType), st)
		}
	}
	for i, accept := range []string{proto, protoFirst, yamlFirst} {
		success("eviction", e.do("POST", ns+"/pods/evicted/eviction",
			`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"evicted"},"deleteOptions":{"dryRun":["All"]}}`, "Accept", accept), accept)
		name := []string{"bound-1", "bound-2", "bound-3"}[i]
		success("binding", e.do("POST", ns+"/pods/"+name+"/binding",
			`{"apiVersion":"v1","kind":"Binding","metadata":{"name":"`+name+`"},"target":{"kind":"Node","name":"n1"}}`, "Accept", accept), accept)
	}
}

// unknownRaw is the raw field (2) of a runtime.Unknown message.
func unknownRaw(t *testing.T, b []byte) []byte {
	t.Helper()
	for len(b) > 0 {
		tag, n := binary.Uvarint(b)
		b = b[n:]
		l, n := binary.Uvarint(b)
		b = b[n:]
		if tag>>3 == 2 {
			return b[:l]
		}
		b = b[l:]
	}
	t.Fatal("no raw field")
	return nil
}
