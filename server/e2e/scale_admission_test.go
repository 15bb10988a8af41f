package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	admregv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/listwatch/listwatch/server/internal/testsupport/kubeapiserver"
)

// scaleAdmission scales a Deployment through /scale (client-go's
// UpdateScale) with a MutatingAdmissionPolicy capping the replicas at 3
// and a validating webhook recording what it is sent, on the server cs
// talks to, and returns what the webhook saw and the replicas written.
func scaleAdmission(t *testing.T, cs kubernetes.Interface, h *hookServer, ns, name string) []string {
	ctx := context.Background()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	one := int32(1)
	labels := map[string]string{"app": "web"}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
			},
		},
	}
	deps := cs.AppsV1().Deployments(ns)
	if _, err := deps.Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	inNS := []admregv1.MatchCondition{{Name: "in-ns", Expression: `object.metadata.namespace == '` + ns + `'`}}
	scaleRule := admregv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments/scale"}}
	none := admregv1.SideEffectClassNone
	fail := admregv1.Fail
	never := admregv1.NeverReinvocationPolicy
	adm := cs.AdmissionregistrationV1()
	if _, err := adm.ValidatingWebhookConfigurations().Create(ctx, &admregv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admregv1.ValidatingWebhook{{
			Name: "scale.example.com", ClientConfig: admregv1.WebhookClientConfig{URL: h.url("/" + name), CABundle: h.ca},
			Rules:       []admregv1.RuleWithOperations{{Operations: []admregv1.OperationType{admregv1.Update}, Rule: scaleRule}},
			SideEffects: &none, AdmissionReviewVersions: []string{"v1"}, FailurePolicy: &fail, MatchConditions: inNS,
		}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = adm.ValidatingWebhookConfigurations().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	if _, err := adm.MutatingAdmissionPolicies().Create(ctx, &admregv1.MutatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admregv1.MutatingAdmissionPolicySpec{
			MatchConstraints: &admregv1.MatchResources{ResourceRules: []admregv1.NamedRuleWithOperations{{
				RuleWithOperations: admregv1.RuleWithOperations{Operations: []admregv1.OperationType{admregv1.Update}, Rule: scaleRule},
			}}},
			MatchConditions:    inNS,
			FailurePolicy:      &fail,
			ReinvocationPolicy: never,
			Mutations: []admregv1.Mutation{{PatchType: admregv1.PatchTypeJSONPatch, JSONPatch: &admregv1.JSONPatch{
				Expression: `object.spec.replicas > 3 ? [JSONPatch{op: 'replace', path: '/spec/replicas', value: 3}] : [JSONPatch{op: 'test', path: '/spec/replicas', value: object.spec.replicas}]`,
			}}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = adm.MutatingAdmissionPolicies().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	if _, err := adm.MutatingAdmissionPolicyBindings().Create(ctx, &admregv1.MutatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       admregv1.MutatingAdmissionPolicyBindingSpec{PolicyName: name},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = adm.MutatingAdmissionPolicyBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
	})

	scale := func(n int32, dryRun bool) (*autoscalingv1.Scale, error) {
		cur, err := deps.GetScale(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		cur.Spec.Replicas = n
		opts := metav1.UpdateOptions{}
		if dryRun {
			opts.DryRun = []string{metav1.DryRunAll}
		}
		return deps.UpdateScale(ctx, "web", cur, opts)
	}
	var last string
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		s, err := scale(5, true)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = fmt.Sprintf("replicas %d, %d reviews", s.Spec.Replicas, len(h.requests("/"+name)))
		return s.Spec.Replicas == 3 && len(h.requests("/"+name)) > 0, nil
	})
	if err != nil {
		t.Fatalf("policy and webhook never took effect: %v (last: %s)", err, last)
	}
	var out []string
	s, err := scale(5, false)
	if err != nil {
		t.Fatalf("UpdateScale: %v", err)
	}
	out = append(out, fmt.Sprintf("UpdateScale(5): scale spec.replicas=%d", s.Spec.Replicas))
	d, err := deps.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, fmt.Sprintf("deployment spec.replicas=%d", *d.Spec.Replicas))
	reqs := h.requests("/" + name)
	r := reqs[len(reqs)-1]
	var obj, old struct {
		APIVersion, Kind string
		Metadata         struct{ Name, Namespace string }
		Spec             struct{ Replicas int32 }
	}
	_ = json.Unmarshal(r.Object.Raw, &obj)
	_ = json.Unmarshal(r.OldObject.Raw, &old)
	out = append(out,
		fmt.Sprintf("review: operation=%s kind=%v resource=%v subResource=%s", r.Operation, r.Kind, r.Resource, r.SubResource),
		fmt.Sprintf("review: requestKind=%v requestResource=%v requestSubResource=%s", r.RequestKind, r.RequestResource, r.RequestSubResource),
		fmt.Sprintf("review: name=%s namespace=%s dryRun=%v options=%s", r.Name, r.Namespace, *r.DryRun, string(r.Options.Raw)),
		fmt.Sprintf("review object: %s %s %s/%s replicas=%d", obj.APIVersion, obj.Kind, obj.Metadata.Namespace, obj.Metadata.Name, obj.Spec.Replicas),
		fmt.Sprintf("review oldObject: %s %s %s/%s replicas=%d", old.APIVersion, old.Kind, old.Metadata.Namespace, old.Metadata.Name, old.Spec.Replicas),
	)
	// A patch through /scale is admitted too.
	if _, err := deps.Patch(ctx, "web", "application/merge-patch+json", []byte(`{"spec":{"replicas":2}}`), metav1.PatchOptions{}, "scale"); err != nil {
		t.Fatalf("patch /scale: %v", err)
	}
	p, err := deps.GetScale(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	reqs = h.requests("/" + name)
	r = reqs[len(reqs)-1]
	_ = json.Unmarshal(r.Object.Raw, &obj)
	out = append(out, fmt.Sprintf("patch /scale: replicas=%d, review %s %s %s replicas=%d", p.Spec.Replicas, r.Operation, r.Kind.Kind, r.SubResource, obj.Spec.Replicas))
	return out
}

// TestKubeScaleAdmission: a write through a Deployment's /scale goes
// through the mutating policies and the validating webhooks with kind
// autoscaling/v1 Scale and subresource scale, as in kube-apiserver.
func TestKubeScaleAdmission(t *testing.T) {
	t.Parallel()
	h := newHookServer(t)
	s := startServer(t, t.TempDir())
	got := scaleAdmission(t, kubernetes.NewForConfigOrDie(restConfig(t, s)), h, "scale-admission", "scale-ours")
	if _, err := kubeapiserver.Binary(); err != nil {
		t.Logf("no kube-apiserver (%v): checking this server's answers alone", err)
		for _, want := range []string{
			"UpdateScale(5): scale spec.replicas=3",
			"deployment spec.replicas=3",
			"review: operation=UPDATE kind=autoscaling/v1, Kind=Scale resource={apps v1 deployments} subResource=scale",
		} {
			if !contains(got, want) {
				t.Errorf("missing %s in\n%s", want, strings.Join(got, "\n"))
			}
		}
		return
	}
	compareLogs(t, got, scaleAdmission(t, kubeClientset(t), h, "scale-admission", "scale-kube"))
}

// crScaleAdmission is scaleAdmission's check for a custom resource's
// /scale: a validating webhook sees the Scale written.
func crScaleAdmission(t *testing.T, cfg *rest.Config, h *hookServer, ns, name string) []string {
	c := newRawClient(t, cfg)
	const plural = "scaleadms"
	crds := "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	hooks := "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
	t.Cleanup(func() {
		c.do("DELETE", hooks+"/"+name, "", "")
		c.do("DELETE", crds+"/"+plural+"."+crGroup, "", "")
		c.do("DELETE", "/api/v1/namespaces/"+ns, "", "")
	})
	c.step("namespace", "POST", "/api/v1/namespaces", jsonCT, `{"metadata":{"name":"`+ns+`"}}`, "metadata.name")
	c.step("crd", "POST", crds, jsonCT, crCRD(plural, "ScaleAdm", scaleSubresources), "metadata.name")
	c.waitServed(plural)
	coll := "/apis/" + crGroup + "/v1/namespaces/" + ns + "/" + plural
	c.step("create", "POST", coll, jsonCT, `{"apiVersion":"`+crGroup+`/v1","kind":"ScaleAdm","metadata":{"name":"web"},"spec":{"replicas":1}}`, "spec")
	ca, _ := json.Marshal(h.ca)
	c.step("webhook", "POST", hooks, jsonCT, `{"metadata":{"name":"`+name+`"},"webhooks":[{"name":"scale.example.com",
		"clientConfig":{"url":"`+*h.url("/" + name)+`","caBundle":`+string(ca)+`},
		"rules":[{"operations":["UPDATE"],"apiGroups":["`+crGroup+`"],"apiVersions":["v1"],"resources":["`+plural+`/scale"]}],
		"sideEffects":"None","admissionReviewVersions":["v1"],"failurePolicy":"Fail",
		"matchConditions":[{"name":"in-ns","expression":"object.metadata.namespace == '`+ns+`'"}]}]}`)
	scale := func(n int, dryRun string) (int, map[string]any) {
		return c.do("PUT", coll+"/web/scale"+dryRun, jsonCT, fmt.Sprintf(`{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"web","namespace":"%s"},"spec":{"replicas":%d}}`, ns, n))
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(h.requests("/"+name)) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("webhook never called")
		}
		scale(4, "?dryRun=All")
		time.Sleep(50 * time.Millisecond) // polling for an asynchronous condition
	}
	code, m := scale(4, "")
	c.log = append(c.log, fmt.Sprintf("PUT /scale: %d spec=%s", code, jsonAt(m, "spec")))
	c.step("get", "GET", coll+"/web", "", "", "spec")
	reqs := h.requests("/" + name)
	r := reqs[len(reqs)-1]
	var obj, old struct {
		APIVersion, Kind string
		Spec             struct{ Replicas int32 }
	}
	_ = json.Unmarshal(r.Object.Raw, &obj)
	_ = json.Unmarshal(r.OldObject.Raw, &old)
	return append(c.log,
		fmt.Sprintf("review: operation=%s kind=%v resource=%v subResource=%s name=%s namespace=%s", r.Operation, r.Kind, r.Resource, r.SubResource, r.Name, r.Namespace),
		fmt.Sprintf("review: object %s %s replicas=%d, oldObject %s %s replicas=%d", obj.APIVersion, obj.Kind, obj.Spec.Replicas, old.APIVersion, old.Kind, old.Spec.Replicas),
	)
}

// TestKubeScaleAdmissionCustomResource: a custom resource's /scale write
// goes through the validating webhooks as a Scale, as in kube-apiserver.
func TestKubeScaleAdmissionCustomResource(t *testing.T) {
	t.Parallel()
	h := newHookServer(t)
	s := startServer(t, t.TempDir())
	got := crScaleAdmission(t, restConfig(t, s), h, "cr-scale-admission", "cr-scale-ours")
	want := []string{
		"PUT /scale: 200 spec={\"replicas\":4}",
		"review: operation=UPDATE kind=autoscaling/v1, Kind=Scale resource={" + crGroup + " v1 scaleadms} subResource=scale name=web namespace=cr-scale-admission",
		"review: object autoscaling/v1 Scale replicas=4, oldObject autoscaling/v1 Scale replicas=1",
	}
	if _, err := kubeapiserver.Binary(); err != nil {
		for _, w := range want {
			if !contains(got, w) {
				t.Errorf("missing %s in\n%s", w, strings.Join(got, "\n"))
			}
		}
		return
	}
	compareLogs(t, got, crScaleAdmission(t, kubeRESTConfig(t), h, "cr-scale-admission", "cr-scale-kube"))
}
