package e2e

import (
	"strings"
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
			k, o := kube.accepting(method, path, "application/json", "", ""), ours.accepting(method, path, "application/json", "", "")
			if k != o {
				t.Errorf("%s %s:\n kube:  %s\n serve: %s", method, path, k, o)
			}
			// Asked for protobuf, the 405 is protobuf on both. (A
			// discovery document or a 404 Status is protobuf from kube,
			// JSON from serve: a known difference, README.)
			k, o = kube.accepting(method, path, wire.ContentTypeProtobuf, "", ""), ours.accepting(method, path, wire.ContentTypeProtobuf, "", "")
			if k != o && strings.HasPrefix(k, "405 ") {
				t.Errorf("%s %s [protobuf]:\n kube:  %s\n serve: %s", method, path, k, o)
			}
			if k[:3] != o[:3] {
				t.Errorf("%s %s [protobuf]: kube %s, serve %s", method, path, k[:3], o[:3])
			}
		}
	}
}
