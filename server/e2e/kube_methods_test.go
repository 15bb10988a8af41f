package e2e

import (
	"bytes"
	"testing"

	"github.com/listwatch/listwatch/wire"
)

// TestKubeNonResourceMethodsSameAsOurs: kube-apiserver serves /version,
// /api and each group version's discovery document as GET routes only,
// and answers another method there (HEAD too) with its router's 405
// Status, in the negotiated media type; /apis, /apis/{group}, OpenAPI and
// a missing group version answer as for GET. serve answers every one of
// them alike: code, content type and, for a Status, reason and message.
func TestKubeNonResourceMethodsSameAsOurs(t *testing.T) {
	kube, ours, _ := sideBySide(t)
	paths := []string{
		"/version", "/version/", "/api", "/api/", "/api/v1", "/api/v1/",
		"/apis/apps/v1", "/apis/apps/v1/", "/apis/apps/v9", "/api/v2", "/apis/nope/v1",
		"/apis", "/apis/apps", "/openapi/v2",
	}
	for _, method := range []string{"POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"} {
		for _, path := range paths {
			for _, accept := range []string{"application/json", wire.ContentTypeProtobuf} {
				k, o := kube.accepting(method, path, accept, "", ""), ours.accepting(method, path, accept, "", "")
				if k != o {
					t.Errorf("%s %s [%s]:\n kube:  %s\n serve: %s", method, path, accept, k, o)
				}
			}
		}
	}
}

// TestKubeDiscoveryMediaSameAsOurs: a discovery document, or a missing
// one's 404, comes in the media type kube-apiserver negotiates for it
// (protobuf, YAML or JSON), and a group's document is the same protobuf.
func TestKubeDiscoveryMediaSameAsOurs(t *testing.T) {
	kube, ours, _ := sideBySide(t)
	for _, path := range []string{"/api", "/apis", "/api/v1", "/apis/apps", "/apis/apps/v1", "/apis/apps/v9", "/api/v2", "/apis/nope"} {
		for _, accept := range []string{
			wire.ContentTypeProtobuf, "application/yaml", "text/html", "*/*", "application/json",
			"application/vnd.kubernetes.protobuf, application/json", "text/html, application/yaml;q=0.5",
		} {
			k, o := kube.accepting("GET", path, accept, "", ""), ours.accepting("GET", path, accept, "", "")
			if k != o {
				t.Errorf("GET %s [%s]:\n kube:  %s\n serve: %s", path, accept, k, o)
			}
		}
	}
	_, _, k := kube.send("GET", "/apis/apps", "", wire.ContentTypeProtobuf, "")
	_, _, o := ours.send("GET", "/apis/apps", "", wire.ContentTypeProtobuf, "")
	if !bytes.Equal(k, o) {
		t.Errorf("GET /apis/apps in protobuf:\n kube:  %q\n serve: %q", k, o)
	}
}

// TestKubeClusterWideListMethodsSameAsOurs: kube's installer routes the
// list of a namespaced kind across namespaces (/api/v1/configmaps) for
// GET only (list and watch; deletecollection is on the namespaced path),
// so another method there is its router's 405 Status; below it
// (/api/v1/configmaps/x) there is no route at all, a 404.
func TestKubeClusterWideListMethodsSameAsOurs(t *testing.T) {
	kube, ours, _ := sideBySide(t)
	for _, method := range []string{"POST", "PUT", "PATCH", "DELETE", "OPTIONS"} {
		for _, path := range []string{"/api/v1/configmaps", "/apis/apps/v1/deployments", "/api/v1/configmaps/x"} {
			k, o := kube.accepting(method, path, "application/json", jsonCT, "{}"), ours.accepting(method, path, "application/json", jsonCT, "{}")
			if k != o {
				t.Errorf("%s %s:\n kube:  %s\n serve: %s", method, path, k, o)
			}
		}
	}
}
