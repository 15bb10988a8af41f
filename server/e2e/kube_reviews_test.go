package e2e

import (
	"encoding/json"
	"fmt"
	"regexp"
	"testing"
)

// TestKubeReviewsManagedFieldsSameAsOurs creates each review of the
// identity APIs on kube-apiserver and on serve and requires the same
// answer: kube's create handler records the write in managedFields
// (manager from fieldManager or the User-Agent, operation Update, the
// review's version, the fields sent) before the review is answered, so
// the reviews answered as sent carry them and those answered with a new
// object (SelfSubjectRulesReview, SelfSubjectReview) do not; a refusal
// quotes the entry recorded. Times are masked; of the two answered with
// a new object only the metadata is compared (their status is who the
// requester is and what it may do, compared elsewhere).
func TestKubeReviewsManagedFieldsSameAsOurs(t *testing.T) {
	kube, ours, ns := sideBySide(t)
	const authz = "/apis/authorization.k8s.io/v1/"
	const authn = "/apis/authentication.k8s.io/v1/"
	sar := `{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"u","resourceAttributes":{"verb":"get","resource":"pods"}}}`
	for _, r := range []struct {
		path, ctype, body string
		metadataOnly      bool
	}{
		{authz + "subjectaccessreviews", jsonCT, sar, false},
		{authz + "subjectaccessreviews?fieldManager=fm", jsonCT, sar, false},
		{authz + "subjectaccessreviews?dryRun=All", jsonCT, sar, false},
		{authz + "subjectaccessreviews?fieldManager=fm", jsonCT, `{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","metadata":{"name":"n","managedFields":[{"manager":"m","operation":"Update","apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{}}}]},"spec":{"user":"u","resourceAttributes":{"verb":"get","resource":"pods"}}}`, false},
		{authz + "selfsubjectaccessreviews", jsonCT, `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"resourceAttributes":{"verb":"get","resource":"pods"}}}`, false},
		{authz + "selfsubjectaccessreviews", "application/yaml", "apiVersion: authorization.k8s.io/v1\nkind: SelfSubjectAccessReview\nspec:\n  nonResourceAttributes:\n    path: /x\n    verb: get\n", false},
		{authz + "namespaces/" + ns + "/localsubjectaccessreviews", jsonCT, `{"apiVersion":"authorization.k8s.io/v1","kind":"LocalSubjectAccessReview","metadata":{"namespace":"` + ns + `"},"spec":{"user":"u","resourceAttributes":{"namespace":"` + ns + `","verb":"get","resource":"pods"}}}`, false},
		{authn + "tokenreviews", jsonCT, `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"nope"}}`, false},
		{authz + "selfsubjectrulesreviews", jsonCT, `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectRulesReview","spec":{"namespace":"` + ns + `"}}`, true},
		{authn + "selfsubjectreviews", jsonCT, `{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`, true},
	} {
		k, o := kube.reviewAnswer(r.path, r.ctype, r.body, r.metadataOnly), ours.reviewAnswer(r.path, r.ctype, r.body, r.metadataOnly)
		if k != o {
			t.Errorf("POST %s %s:\n kube:  %s\n serve: %s", r.path, r.body, k, o)
		}
	}
	// The comparison can fail: kube records the create.
	if k := kube.reviewAnswer(authz+"subjectaccessreviews?fieldManager=fm", jsonCT, sar, false); !managedByFM.MatchString(k) {
		t.Errorf("kube's SubjectAccessReview: %s", k)
	}
}

var managedByFM = regexp.MustCompile(`"managedFields":\[\{"apiVersion":"authorization.k8s.io/v1","fieldsType":"FieldsV1","fieldsV1":\{[^]]*\},"manager":"fm","operation":"Update","time":"X"\}\]`)

// reviewAnswer is the code and JSON (keys sorted, times masked) of the
// answer to a review's POST; with metadataOnly, of its metadata alone.
func (c *rawClient) reviewAnswer(path, ctype, body string, metadataOnly bool) string {
	c.t.Helper()
	code, _, b := c.send("POST", path, ctype, "application/json", body)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return string(b)
	}
	var v any = m
	if metadataOnly && m["kind"] != "Status" {
		v = m["metadata"]
	}
	j, _ := json.Marshal(v)
	s := volatile.ReplaceAllString(string(j), `${1}"X"`)
	return fmt.Sprintf("%d %s", code, escapedServerValues.ReplaceAllString(s, `${1}X${2}`))
}
