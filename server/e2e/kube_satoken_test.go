package e2e

import (
	"errors"
	"maps"
	"reflect"
	"slices"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// TestKubeServiceAccountTokensSideBySide: the same TokenRequests against
// a real kube-apiserver and listwatch get the same errors (code, reason,
// message, causes); the tokens issued have the same claims, with the same
// private claims for a pod-bound one; the service account they
// authenticate has the same groups and extra keys.
func TestKubeServiceAccountTokensSideBySide(t *testing.T) {
	t.Parallel()
	kube := kubeServer(t)
	s := startServer(t, "")
	ours := kubernetes.NewForConfigOrDie(restConfig(t, s))
	theirs := kubernetes.NewForConfigOrDie(tokenRestConfigFor(kube.URL, kube.Creds.CAPEM, kube.Creds.AdminToken))
	ourPod, kubePod := setupTokenFixture(t, ours), setupTokenFixture(t, theirs)

	ourCases, kubeCases := tokenRequestErrorCases(ourPod.UID), tokenRequestErrorCases(kubePod.UID)
	for i, tc := range ourCases {
		ourErr := tokenRequestErr(t, ours, tc.sa, tc.spec)
		kubeErr := tokenRequestErr(t, theirs, tc.sa, kubeCases[i].spec)
		var o, k apierrors.APIStatus
		if !errors.As(ourErr, &o) || !errors.As(kubeErr, &k) {
			t.Errorf("%s: listwatch %v, kube %v", tc.name, ourErr, kubeErr)
			continue
		}
		os, ks := o.Status(), k.Status()
		if tc.spec.BoundObjectRef != nil && tc.spec.BoundObjectRef.UID != "" {
			// Messages carry each server's pod uid.
			os.Message, ks.Message = "", ""
		}
		if os.Code != ks.Code || os.Reason != ks.Reason || os.Message != ks.Message || !reflect.DeepEqual(os.Details, ks.Details) {
			t.Errorf("%s:\n listwatch %d %s %q %+v\n kube      %d %s %q %+v", tc.name,
				os.Code, os.Reason, os.Message, os.Details, ks.Code, ks.Reason, ks.Message, ks.Details)
		}
	}

	// Claims of an unbound and of a pod-bound token.
	for _, spec := range []authenticationv1.TokenRequestSpec{
		{},
		{Audiences: []string{"vault", "api"}, ExpirationSeconds: pointerTo[int64](900)},
	} {
		ourTR, err := ours.CoreV1().ServiceAccounts("default").CreateToken(t.Context(), "sat-robot", &authenticationv1.TokenRequest{Spec: spec}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		kubeTR, err := theirs.CoreV1().ServiceAccounts("default").CreateToken(t.Context(), "sat-robot", &authenticationv1.TokenRequest{Spec: spec}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		compareClaims(t, unverifiedClaims(t, ourTR.Status.Token), unverifiedClaims(t, kubeTR.Status.Token))
		if !slices.Equal(ourTR.Spec.Audiences, kubeTR.Spec.Audiences) || *ourTR.Spec.ExpirationSeconds != *kubeTR.Spec.ExpirationSeconds {
			t.Errorf("spec: listwatch %+v, kube %+v", ourTR.Spec, kubeTR.Spec)
		}
	}
	bound := func(c kubernetes.Interface, uid string) *authenticationv1.TokenRequest {
		tr, err := c.CoreV1().ServiceAccounts("default").CreateToken(t.Context(), "sat-robot", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
			BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "sat-pod", UID: types.UID(uid)}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	ourTR, kubeTR := bound(ours, string(ourPod.UID)), bound(theirs, string(kubePod.UID))
	compareClaims(t, unverifiedClaims(t, ourTR.Status.Token), unverifiedClaims(t, kubeTR.Status.Token))

	// The user a pod-bound token authenticates as.
	ourUser, err := kubernetes.NewForConfigOrDie(tokenRestConfig(s, ourTR.Status.Token)).AuthenticationV1().SelfSubjectReviews().Create(t.Context(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kubeUser, err := kubernetes.NewForConfigOrDie(tokenRestConfigFor(kube.URL, kube.Creds.CAPEM, kubeTR.Status.Token)).AuthenticationV1().SelfSubjectReviews().Create(t.Context(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ou, ku := ourUser.Status.UserInfo, kubeUser.Status.UserInfo
	if ou.Username != ku.Username || !slices.Equal(ou.Groups, ku.Groups) ||
		!slices.Equal(slices.Sorted(maps.Keys(ou.Extra)), slices.Sorted(maps.Keys(ku.Extra))) ||
		!slices.Equal(ou.Extra["authentication.kubernetes.io/pod-name"], ku.Extra["authentication.kubernetes.io/pod-name"]) ||
		!slices.Equal(ou.Extra["authentication.kubernetes.io/node-name"], ku.Extra["authentication.kubernetes.io/node-name"]) {
		t.Errorf("whoami:\n listwatch %+v\n kube      %+v", ou, ku)
	}
}

// compareClaims: the same claim names, the same names inside
// kubernetes.io and its objects, the same iss, aud, sub and lifetime.
func compareClaims(t *testing.T, ours, kube map[string]any) {
	t.Helper()
	if !slices.Equal(slices.Sorted(maps.Keys(ours)), slices.Sorted(maps.Keys(kube))) {
		t.Errorf("claims:\n listwatch %v\n kube      %v", ours, kube)
		return
	}
	for _, c := range []string{"iss", "sub"} {
		if ours[c] != kube[c] {
			t.Errorf("%s: listwatch %v, kube %v", c, ours[c], kube[c])
		}
	}
	if !slices.Equal(toStrings(ours["aud"]), toStrings(kube["aud"])) {
		t.Errorf("aud: listwatch %v, kube %v", ours["aud"], kube["aud"])
	}
	if ol, kl := ours["exp"].(float64)-ours["iat"].(float64), kube["exp"].(float64)-kube["iat"].(float64); ol != kl {
		t.Errorf("lifetime: listwatch %v, kube %v", ol, kl)
	}
	ok, _ := ours["kubernetes.io"].(map[string]any)
	kk, _ := kube["kubernetes.io"].(map[string]any)
	if !slices.Equal(slices.Sorted(maps.Keys(ok)), slices.Sorted(maps.Keys(kk))) {
		t.Errorf("kubernetes.io:\n listwatch %v\n kube      %v", ok, kk)
		return
	}
	for k, v := range kk {
		if m, isMap := v.(map[string]any); isMap {
			om, _ := ok[k].(map[string]any)
			if !slices.Equal(slices.Sorted(maps.Keys(om)), slices.Sorted(maps.Keys(m))) {
				t.Errorf("kubernetes.io.%s: listwatch %v, kube %v", k, om, m)
			}
			if m["name"] != om["name"] {
				t.Errorf("kubernetes.io.%s.name: listwatch %v, kube %v", k, om["name"], m["name"])
			}
		} else if ok[k] != v {
			t.Errorf("kubernetes.io.%s: listwatch %v, kube %v", k, ok[k], v)
		}
	}
}
