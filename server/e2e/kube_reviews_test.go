package e2e

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
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
	t.Parallel()
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

// TestKubeReviewsMediaSameAsOurs creates each review of the identity APIs
// with a body in JSON, YAML and protobuf and each Accept header of
// subMediaAccepts and subMetaAccepts: kube-apiserver answers in the media
// type negotiated, protobuf included, and offers no Table (its review
// storage converts none: a Table alone is its 406, before the review is
// made), and serve the same. Answers are compared as
// TestKubeSubresourceMediaSameAsOurs compares them; of the two reviews
// answered with a new object (SelfSubjectRulesReview, SelfSubjectReview)
// all but the status (who the requester is and what it may do).
func TestKubeReviewsMediaSameAsOurs(t *testing.T) {
	t.Parallel()
	kube, ours, ns := sideBySide(t)
	const authz = "/apis/authorization.k8s.io/v1/"
	const authn = "/apis/authentication.k8s.io/v1/"
	attrs := &authorizationv1.ResourceAttributes{Namespace: ns, Verb: "get", Resource: "pods"}
	typeMeta := func(group, kind string) metav1.TypeMeta {
		return metav1.TypeMeta{APIVersion: group + "/v1", Kind: kind}
	}
	reviews := []struct {
		path         string
		obj          runtime.Object
		metadataOnly bool
	}{
		{authz + "subjectaccessreviews", &authorizationv1.SubjectAccessReview{TypeMeta: typeMeta("authorization.k8s.io", "SubjectAccessReview"),
			Spec: authorizationv1.SubjectAccessReviewSpec{User: "u", ResourceAttributes: attrs}}, false},
		{authz + "namespaces/" + ns + "/localsubjectaccessreviews", &authorizationv1.LocalSubjectAccessReview{TypeMeta: typeMeta("authorization.k8s.io", "LocalSubjectAccessReview"),
			ObjectMeta: metav1.ObjectMeta{Namespace: ns}, Spec: authorizationv1.SubjectAccessReviewSpec{User: "u", ResourceAttributes: attrs}}, false},
		{authz + "selfsubjectaccessreviews", &authorizationv1.SelfSubjectAccessReview{TypeMeta: typeMeta("authorization.k8s.io", "SelfSubjectAccessReview"),
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: attrs}}, false},
		{authn + "tokenreviews", &authenticationv1.TokenReview{TypeMeta: typeMeta("authentication.k8s.io", "TokenReview"),
			Spec: authenticationv1.TokenReviewSpec{Token: "nope"}}, false},
		{authz + "selfsubjectrulesreviews", &authorizationv1.SelfSubjectRulesReview{TypeMeta: typeMeta("authorization.k8s.io", "SelfSubjectRulesReview"),
			Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: ns}}, true},
		{authn + "selfsubjectreviews", &authenticationv1.SelfSubjectReview{TypeMeta: typeMeta("authentication.k8s.io", "SelfSubjectReview")}, true},
	}
	tables := 0
	for _, r := range reviews {
		for _, ct := range []string{jsonCT, "application/yaml", "application/vnd.kubernetes.protobuf"} {
			body := encodeAs(t, r.obj, ct)
			for _, accept := range slices.Concat(subMediaAccepts, subMetaAccepts) {
				k := kube.reviewMedia(r.path, accept, ct, body, r.metadataOnly)
				o := ours.reviewMedia(r.path, accept, ct, body, r.metadataOnly)
				if k != o {
					t.Errorf("POST %s [%s] [Accept %s]:\n kube:  %s\n serve: %s", r.path, ct, accept, k, o)
				}
				if accept == subMetaAccepts[0] && strings.HasPrefix(k, "406 ") {
					tables++
				}
			}
		}
	}
	// The comparison can fail: kube refuses a review's Table.
	if want := len(reviews) * 3; tables != want {
		t.Errorf("kube refused %d Tables of a review, want %d", tables, want)
	}
}

// reviewMedia is mediaAnswer of a review's POST; with metadataOnly,
// without the answer's status.
func (c *rawClient) reviewMedia(path, accept, ctype, body string, metadataOnly bool) string {
	c.t.Helper()
	a := c.mediaAnswer("POST", path, accept, ctype, body)
	i := strings.IndexByte(a, '{')
	var m map[string]any
	if !metadataOnly || i < 0 || json.Unmarshal([]byte(a[i:]), &m) != nil || m["kind"] == "Status" {
		return a
	}
	delete(m, "status")
	return a[:i] + jsonOf(m)
}
