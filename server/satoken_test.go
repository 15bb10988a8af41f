package server

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"reflect"
	"testing"

	kubesa "k8s.io/kubernetes/pkg/serviceaccount"
)

// withServiceAccountTokens configures the token subresource with a fresh
// key.
func withServiceAccountTokens(t *testing.T) envOption {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	issuer, err := kubesa.JWTTokenGenerator("https://kubernetes.default.svc", key)
	if err != nil {
		t.Fatal(err)
	}
	return func(c *Config) {
		c.APIAudiences = []string{"https://kubernetes.default.svc"}
		c.ServiceAccountTokens = &ServiceAccountTokenConfig{Issuer: issuer}
	}
}

// TestTokenDiscoveryMatchesKube: with tokens configured, serviceaccounts
// are described in aggregated discovery exactly as kube-apiserver v1.37.2
// describes them, token subresource included; without, there is no such
// subresource (and the path is 404).
func TestTokenDiscoveryMatchesKube(t *testing.T) {
	kube := loadKubeDiscovery(t)["/v1/serviceaccounts"]
	for _, tokens := range []bool{true, false} {
		var opts []envOption
		if tokens {
			opts = append(opts, withServiceAccountTokens(t))
		}
		e := newEnv(t, opts...)
		core, _ := aggregatedList(t, e, "/api")
		var got any
		for _, r := range core.Items[0].Versions[0].Resources {
			if r.Resource == "serviceaccounts" {
				got = r.Subresources
			}
		}
		if tokens && !reflect.DeepEqual(got, kube.Subresources) {
			t.Errorf("serviceaccounts subresources:\n listwatch %+v\n kube      %+v", got, kube.Subresources)
		}
		if !tokens && !reflect.ValueOf(got).IsNil() {
			t.Errorf("without tokens: %+v", got)
		}
		r := e.do("POST", "/api/v1/namespaces/default/serviceaccounts/x/token", `{}`, "Content-Type", "application/json")
		want := map[bool]string{true: `serviceaccounts "x" not found`, false: "the server could not find the requested resource"}[tokens]
		if msg, _ := r.json(t)["message"].(string); r.code != 404 || msg != want {
			t.Errorf("tokens %v: POST token of a missing service account: %d %s", tokens, r.code, r.body)
		}
	}
}

// TestTokenRequestManagedFields: a TokenRequest's answer lists the fields
// of its spec, set or defaulted, in its managedFields, as kube's create
// handler records them with the token subresource's field manager: by the
// request's field manager (else its user agent), an Update of
// subresource token.
func TestTokenRequestManagedFields(t *testing.T) {
	e := newEnv(t, withServiceAccountTokens(t))
	const sas = "/api/v1/namespaces/default/serviceaccounts"
	e.must(201, "POST", sas, map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "robot"}})
	tr := e.must(201, "POST", sas+"/robot/token?fieldManager=minter", `{"spec":{"audiences":["x"]}}`)
	entries, _ := path(tr, "metadata", "managedFields").([]any)
	if len(entries) != 1 {
		t.Fatalf("managedFields: %v", path(tr, "metadata", "managedFields"))
	}
	m := entries[0].(map[string]any)
	fields, _ := json.Marshal(m["fieldsV1"])
	if m["manager"] != "minter" || m["operation"] != "Update" || m["subresource"] != "token" ||
		m["apiVersion"] != "authentication.k8s.io/v1" || string(fields) != `{"f:spec":{"f:audiences":{},"f:expirationSeconds":{}}}` {
		t.Errorf("managedFields entry: %v (fields %s)", m, fields)
	}
}
