package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admregv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/listwatch/listwatch/server/internal/testsupport/kubeapiserver"
)

// hookServer is a real HTTPS admission webhook with its own CA: each path
// is one behaviour, and it records what it was sent.
type hookServer struct {
	srv    *httptest.Server
	ca     []byte // PEM, for caBundle
	mu     sync.Mutex
	calls  map[string][]admissionv1.AdmissionRequest // by path
	hangCh chan struct{}
	// custom answers the paths the switch in serve does not know: it
	// fills resp, or returns false for serve's default answer.
	custom func(path string, req admissionv1.AdmissionRequest, resp *admissionv1.AdmissionResponse) bool
}

func newHookServer(t *testing.T, dnsNames ...string) *hookServer {
	h := &hookServer{calls: map[string][]admissionv1.AdmissionRequest{}, hangCh: make(chan struct{})}
	h.srv, h.ca = startTLSHook(t, http.HandlerFunc(h.serve), dnsNames...)
	t.Cleanup(func() {
		close(h.hangCh)
		h.srv.Close()
	})
	return h
}

func (h *hookServer) url(path string) *string {
	u := h.srv.URL + path
	return &u
}

func (h *hookServer) requests(path string) []admissionv1.AdmissionRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]admissionv1.AdmissionRequest(nil), h.calls[path]...)
}

func (h *hookServer) serve(w http.ResponseWriter, r *http.Request) {
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(w, "bad review", http.StatusBadRequest)
		return
	}
	req := *review.Request
	h.mu.Lock()
	h.calls[r.URL.Path] = append(h.calls[r.URL.Path], req)
	h.mu.Unlock()
	resp := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	switch r.URL.Path {
	case "/deny":
		resp.Allowed = false
		resp.Result = &metav1.Status{Code: http.StatusForbidden, Message: "no entry for " + req.Name}
	case "/warn":
		resp.Warnings = []string{"careful with " + req.Name}
	case "/patch", "/patch2":
		label := map[string]string{"/patch": "mutated", "/patch2": "second"}[r.URL.Path]
		var obj struct {
			Metadata metav1.ObjectMeta `json:"metadata"`
		}
		_ = json.Unmarshal(req.Object.Raw, &obj)
		if obj.Metadata.Labels[label] != "yes" {
			var ops []map[string]any
			if obj.Metadata.Labels == nil {
				ops = append(ops, map[string]any{"op": "add", "path": "/metadata/labels", "value": map[string]string{}})
			}
			ops = append(ops, map[string]any{"op": "add", "path": "/metadata/labels/" + label, "value": "yes"})
			resp.Patch, _ = json.Marshal(ops)
			pt := admissionv1.PatchTypeJSONPatch
			resp.PatchType = &pt
		}
	case "/hang":
		select {
		case <-r.Context().Done():
		case <-h.hangCh:
		}
		return
	default:
		if h.custom != nil {
			h.custom(r.URL.Path, req, resp)
		}
	}
	review.Response = resp
	review.Request = nil
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&review)
}

// startTLSHook starts handler over HTTPS on 127.0.0.1 with its own
// self-signed certificate, for 127.0.0.1 and dnsNames (a service's name as
// kube's webhook client verifies it), and returns it with the
// certificate's PEM, for a caBundle. The caller closes it.
func startTLSHook(t *testing.T, handler http.Handler, dnsNames ...string) (*httptest.Server, []byte) {
	srv := httptest.NewUnstartedServer(handler)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "webhook"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: dnsNames,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
	srv.StartTLS()
	return srv, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// closedURL is an https URL nothing listens on.
func closedURL(t *testing.T) *string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := "https://" + ln.Addr().String() + "/down"
	ln.Close()
	return &u
}

// warnings collects the warnings of a client-go client.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, text)
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.msgs
	w.msgs = nil
	return out
}

func labelSel(k, v string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{k: v}}
}

func cmRule(ops ...admregv1.OperationType) []admregv1.RuleWithOperations {
	return []admregv1.RuleWithOperations{{
		Operations: ops,
		Rule:       admregv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
	}}
}

func TestWebhooks(t *testing.T) {
	t.Parallel()
	s := startServer(t, t.TempDir())
	cfg := restConfig(t, s)
	warn := &warnings{}
	cfg.WarningHandler = warn
	cs := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()
	h := newHookServer(t)

	for _, ns := range []*corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: "wh", Labels: map[string]string{"webhooks": "on"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "plain"}},
	} {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	none := admregv1.SideEffectClassNone
	fail, ignore := admregv1.Fail, admregv1.Ignore
	one := int32(1)
	ifNeeded := admregv1.IfNeededReinvocationPolicy
	client := func(path string) admregv1.WebhookClientConfig {
		return admregv1.WebhookClientConfig{URL: h.url(path), CABundle: h.ca}
	}
	vhook := func(name string, cc admregv1.WebhookClientConfig, obj *metav1.LabelSelector, ops ...admregv1.OperationType) admregv1.ValidatingWebhook {
		if len(ops) == 0 {
			ops = []admregv1.OperationType{admregv1.Create, admregv1.Update}
		}
		return admregv1.ValidatingWebhook{
			Name: name, ClientConfig: cc, Rules: cmRule(ops...), SideEffects: &none,
			AdmissionReviewVersions: []string{"v1"}, FailurePolicy: &fail,
			NamespaceSelector: labelSel("webhooks", "on"), ObjectSelector: obj,
		}
	}
	ignoreHook := vhook("ignore.example.com", admregv1.WebhookClientConfig{URL: closedURL(t)}, labelSel("down", "ignore"))
	ignoreHook.FailurePolicy = &ignore
	hang := vhook("hang.example.com", client("/hang"), labelSel("hang", "yes"))
	hang.TimeoutSeconds = &one
	warnHook := vhook("warn.example.com", client("/warn"), nil)
	warnHook.MatchConditions = []admregv1.MatchCondition{{Name: "warn-prefix", Expression: `object.metadata.name.startsWith("warn-")`}}
	badCA := vhook("badca.example.com", admregv1.WebhookClientConfig{URL: h.url("/warn"), CABundle: []byte("not a certificate")}, labelSel("badca", "yes"))
	validating := &admregv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "validate"},
		Webhooks: []admregv1.ValidatingWebhook{
			vhook("deny.example.com", client("/deny"), labelSel("deny", "yes")),
			vhook("protect.example.com", client("/deny"), labelSel("protect", "yes"), admregv1.Delete),
			warnHook,
			vhook("fail.example.com", admregv1.WebhookClientConfig{URL: closedURL(t)}, labelSel("down", "fail")),
			ignoreHook,
			hang,
			badCA,
		},
	}
	mhook := func(name, path string) admregv1.MutatingWebhook {
		return admregv1.MutatingWebhook{
			Name: name, ClientConfig: client(path), Rules: cmRule(admregv1.Create), SideEffects: &none,
			AdmissionReviewVersions: []string{"v1"}, FailurePolicy: &fail,
			NamespaceSelector: labelSel("webhooks", "on"), ReinvocationPolicy: &ifNeeded,
		}
	}
	mutatingCfg := &admregv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "mutate"},
		Webhooks:   []admregv1.MutatingWebhook{mhook("patch.example.com", "/patch"), mhook("patch2.example.com", "/patch2")},
	}
	if _, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, validating, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, mutatingCfg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cms := cs.CoreV1().ConfigMaps("wh")
	cm := func(name string, labels ...string) *corev1.ConfigMap {
		c := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}
		for i := 0; i+1 < len(labels); i += 2 {
			if c.Labels == nil {
				c.Labels = map[string]string{}
			}
			c.Labels[labels[i]] = labels[i+1]
		}
		return c
	}
	// The configurations reach the server's informers asynchronously, as
	// in kube: wait until a dry-run create is both mutated and denied.
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := cms.Create(ctx, cm("probe", "deny", "yes"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && len(h.requests("/patch")) > 0, nil
	})
	if err != nil {
		t.Fatalf("webhook configurations never took effect: %v", err)
	}

	t.Run("mutate with JSONPatch and reinvocation", func(t *testing.T) {
		before := len(h.requests("/patch"))
		got, err := cms.Create(ctx, cm("mutated"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Labels["mutated"] != "yes" || got.Labels["second"] != "yes" {
			t.Fatalf("labels = %v, want both webhooks' labels", got.Labels)
		}
		// patch.example.com ran, then patch2 changed the object, so the
		// first (IfNeeded) was called again: twice for this object.
		var n int
		for _, r := range h.requests("/patch")[before:] {
			if r.Name == "mutated" {
				n++
				if r.Operation != admissionv1.Create || r.Kind.Kind != "ConfigMap" || r.Namespace != "wh" {
					t.Errorf("request = %+v", r)
				}
			}
		}
		if n != 2 {
			t.Errorf("patch.example.com called %d times for the object, want 2 (reinvoked)", n)
		}
		out := kubectl(t, s, "", "get", "configmap", "mutated", "-n", "wh", "-o", "jsonpath={.metadata.labels.mutated}")
		if out != "yes" {
			t.Errorf("kubectl sees label %q", out)
		}
	})

	t.Run("namespace selector", func(t *testing.T) {
		got, err := cs.CoreV1().ConfigMaps("plain").Create(ctx, cm("untouched", "deny", "yes"), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("a namespace the selector does not match: %v", err)
		}
		if got.Labels["mutated"] != "" {
			t.Errorf("mutated outside the selected namespaces: %v", got.Labels)
		}
	})

	t.Run("deny", func(t *testing.T) {
		_, err := cms.Create(ctx, cm("denied", "deny", "yes"), metav1.CreateOptions{})
		wantStatus(t, err, http.StatusForbidden, `admission webhook "deny.example.com" denied the request: no entry for denied`)
		if _, err := cms.Get(ctx, "denied", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("a denied object was stored: %v", err)
		}
		// An update into the selector is denied too, with the old object.
		if _, err := cms.Create(ctx, cm("later"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		_, err = cms.Patch(ctx, "later", "application/merge-patch+json", []byte(`{"metadata":{"labels":{"deny":"yes"}}}`), metav1.PatchOptions{})
		wantStatus(t, err, http.StatusForbidden, `admission webhook "deny.example.com" denied the request: no entry for later`)
		reqs := h.requests("/deny")
		last := reqs[len(reqs)-1]
		if last.Operation != admissionv1.Update || len(last.OldObject.Raw) == 0 {
			t.Errorf("update review: operation %s, oldObject %d bytes", last.Operation, len(last.OldObject.Raw))
		}
	})

	t.Run("warnings and matchConditions", func(t *testing.T) {
		warn.take()
		if _, err := cms.Create(ctx, cm("warn-me"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if got := warn.take(); len(got) != 1 || got[0] != "careful with warn-me" {
			t.Errorf("warnings = %q", got)
		}
		// A dry-run update runs admission once (as kube's, from a read
		// of storage), also when the watch cache holds the object.
		if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			l, err := cms.List(ctx, metav1.ListOptions{ResourceVersion: "0", FieldSelector: "metadata.name=warn-me"})
			return err == nil && len(l.Items) == 1, nil
		}); err != nil {
			t.Fatal(err)
		}
		before := len(h.requests("/warn"))
		if _, err := cms.Update(ctx, cm("warn-me", "dry", "run"), metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Fatal(err)
		}
		if n := len(h.requests("/warn")) - before; n != 1 {
			t.Errorf("a dry-run update called the validating webhook %d times", n)
		}
		// So does an update that changes nothing.
		cur, err := cms.Get(ctx, "warn-me", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		before = len(h.requests("/warn"))
		if _, err := cms.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if n := len(h.requests("/warn")) - before; n != 1 {
			t.Errorf("an update that changes nothing called the validating webhook %d times", n)
		}
		warn.take()
		if _, err := cms.Create(ctx, cm("quiet"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if got := warn.take(); len(got) != 0 {
			t.Errorf("matchCondition false, yet warnings %q", got)
		}
	})

	t.Run("failurePolicy Fail with the webhook down", func(t *testing.T) {
		_, err := cms.Create(ctx, cm("down-fail", "down", "fail"), metav1.CreateOptions{})
		wantStatus(t, err, http.StatusInternalServerError, `Internal error occurred: failed calling webhook "fail.example.com": failed to call webhook: Post "https://127.0.0.1:`)
	})

	t.Run("failurePolicy Ignore with the webhook down", func(t *testing.T) {
		if _, err := cms.Create(ctx, cm("down-ignore", "down", "ignore"), metav1.CreateOptions{}); err != nil {
			t.Fatalf("Ignore: %v", err)
		}
	})

	t.Run("hanging webhook times out", func(t *testing.T) {
		start := time.Now()
		_, err := cms.Create(ctx, cm("hang", "hang", "yes"), metav1.CreateOptions{})
		wantStatus(t, err, http.StatusInternalServerError, `Internal error occurred: failed calling webhook "hang.example.com": failed to call webhook: Post "`+h.srv.URL+`/hang?timeout=1s": context deadline exceeded`)
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("took %v with timeoutSeconds 1", d)
		}
	})

	t.Run("bad caBundle", func(t *testing.T) {
		_, err := cms.Create(ctx, cm("badca", "badca", "yes"), metav1.CreateOptions{})
		wantStatus(t, err, http.StatusInternalServerError, `Internal error occurred: failed calling webhook "badca.example.com": could not get REST client: unable to load root certificates: unable to parse bytes as PEM block`)
	})

	t.Run("delete goes through validating webhooks", func(t *testing.T) {
		if _, err := cms.Create(ctx, cm("protected", "protect", "yes"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		err := cms.Delete(ctx, "protected", metav1.DeleteOptions{})
		wantStatus(t, err, http.StatusForbidden, `admission webhook "protect.example.com" denied the request: no entry for protected`)
		reqs := h.requests("/deny")
		last := reqs[len(reqs)-1]
		if last.Operation != admissionv1.Delete || len(last.OldObject.Raw) == 0 || len(last.Object.Raw) != 0 {
			t.Errorf("delete review: operation %s, oldObject %d bytes, object %d bytes", last.Operation, len(last.OldObject.Raw), len(last.Object.Raw))
		}
		if _, err := cms.Get(ctx, "protected", metav1.GetOptions{}); err != nil {
			t.Errorf("denied delete, yet: %v", err)
		}
	})

	t.Run("service reference without endpoints", func(t *testing.T) {
		// No kube-proxy: a service resolves, as with kube's aggregator
		// routing, to one of its ready endpoints (EndpointSlices); kube's
		// validation keeps loopback addresses out of those, so here the
		// service has none, and the webhook fails closed.
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "hooksvc"},
			Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, ClusterIPs: []string{corev1.ClusterIPNone},
				Ports: []corev1.ServicePort{{Name: "https", Port: 8443}}},
		}
		if _, err := cs.CoreV1().Services("wh").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		svcHook := vhook("svc.example.com", admregv1.WebhookClientConfig{
			Service:  &admregv1.ServiceReference{Namespace: "wh", Name: "hooksvc", Path: new("/deny"), Port: new(int32(8443))},
			CABundle: h.ca,
		}, labelSel("via", "service"))
		if _, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &admregv1.ValidatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: "by-service"}, Webhooks: []admregv1.ValidatingWebhook{svcHook},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var last error
		err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			_, last = cms.Create(ctx, cm("via-service", "via", "service"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return last != nil, nil
		})
		if err != nil {
			t.Fatalf("the service's webhook was never tried: %v", err)
		}
		wantStatus(t, last, http.StatusInternalServerError, `Internal error occurred: failed calling webhook "svc.example.com": failed to call webhook: Post "https://hooksvc.wh.svc:8443/deny?timeout=10s": no endpoints available for service "hooksvc"`)
	})

	t.Run("kube validation of the configuration", func(t *testing.T) {
		bad := &admregv1.ValidatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: "bad"},
			Webhooks:   []admregv1.ValidatingWebhook{vhook("bad.example.com", admregv1.WebhookClientConfig{URL: new("http://127.0.0.1/x")}, nil)},
		}
		_, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, bad, metav1.CreateOptions{})
		wantStatus(t, err, http.StatusUnprocessableEntity, `ValidatingWebhookConfiguration.admissionregistration.k8s.io "bad" is invalid: webhooks[0].clientConfig.url: Invalid value: "http": 'https' is the only allowed URL scheme; desired format: https://host[/path]`)
	})
}

// wantStatus checks err is kube's Status with code and a message
// beginning with prefix.
func wantStatus(t *testing.T, err error, code int32, prefix string) {
	t.Helper()
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		t.Fatalf("err = %v, want a Status %d", err, code)
	}
	if got := st.Status(); got.Code != code || !strings.HasPrefix(got.Message, prefix) {
		t.Errorf("Status %d %q\nwant %d %q...", got.Code, got.Message, code, prefix)
	}
}

// kubeClientset is a client-go clientset of the real kube-apiserver.
func kubeClientset(t *testing.T) kubernetes.Interface {
	k := kubeServer(t)
	cfg := k.AdminConfig()
	return kubernetes.NewForConfigOrDie(&rest.Config{
		Host: cfg.Host, BearerToken: cfg.BearerToken,
		TLSClientConfig: rest.TLSClientConfig{CAData: cfg.CAData},
	})
}

// webhookAnswers sets up deny, down (Fail) and hanging webhooks on the
// server cs talks to, selected by label test=sel, and returns the Status
// of a create through each, and of a delete the deny hook refuses.
func webhookAnswers(t *testing.T, cs kubernetes.Interface, h *hookServer, down *string, ns, sel string) map[string]metav1.Status {
	ctx := context.Background()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	none := admregv1.SideEffectClassNone
	fail := admregv1.Fail
	one := int32(1)
	hook := func(name, what string, url *string, ops ...admregv1.OperationType) admregv1.ValidatingWebhook {
		return admregv1.ValidatingWebhook{
			Name: name, ClientConfig: admregv1.WebhookClientConfig{URL: url, CABundle: h.ca},
			Rules: cmRule(ops...), SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
			FailurePolicy: &fail, TimeoutSeconds: &one,
			ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"test": sel, "what": what}},
		}
	}
	cfg := &admregv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: sel},
		Webhooks: []admregv1.ValidatingWebhook{
			hook("deny.example.com", "deny", h.url("/deny"), admregv1.Create, admregv1.Delete),
			hook("down.example.com", "down", down, admregv1.Create),
			hook("hang.example.com", "hang", h.url("/hang"), admregv1.Create),
		},
	}
	// The hanging hook times out in a second; the denying one answers,
	// and is given time to on a loaded machine (its URL's ?timeout is in
	// no answer compared).
	thirty := int32(30)
	cfg.Webhooks[0].TimeoutSeconds = &thirty
	if _, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, cfg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.Background(), sel, metav1.DeleteOptions{})
	})
	cms := cs.CoreV1().ConfigMaps(ns)
	cm := func(name, what string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"test": sel, "what": what}}}
	}
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := cms.Create(ctx, cm("probe", "deny"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil, nil
	})
	if err != nil {
		t.Fatalf("configuration never took effect: %v", err)
	}
	status := func(err error) metav1.Status {
		var st apierrors.APIStatus
		if !errors.As(err, &st) {
			t.Fatalf("err = %v, want a Status", err)
		}
		return st.Status()
	}
	out := map[string]metav1.Status{}
	for _, what := range []string{"deny", "down", "hang"} {
		_, err := cms.Create(ctx, cm(what, what), metav1.CreateOptions{})
		out["create "+what] = status(err)
	}
	if _, err := cms.Create(ctx, cm("kept", "other"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Patch(ctx, "kept", "application/merge-patch+json", []byte(`{"metadata":{"labels":{"what":"deny"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err) // UPDATE is not in the deny hook's rules
	}
	out["delete deny"] = status(cms.Delete(ctx, "kept", metav1.DeleteOptions{}))
	return out
}

// TestKubeWebhookAnswers compares the answers of a denying, a down and a
// hanging webhook with a real kube-apiserver's.
func TestKubeWebhookAnswers(t *testing.T) {
	t.Parallel()
	kcs := kubeClientset(t)
	h := newHookServer(t)
	down := closedURL(t)
	s := startServer(t, t.TempDir())
	// A namespace of this run's: kube's stays Terminating (no namespace
	// controller), and the shared kube-apiserver meets the test again
	// under -count.
	ns := fmt.Sprintf("webhook-answers-%d", time.Now().UnixNano()%1e9)
	want := webhookAnswers(t, kcs, h, down, ns, "webhook-answers")
	got := webhookAnswers(t, kubernetes.NewForConfigOrDie(restConfig(t, s)), h, down, ns, "webhook-answers")
	for k, w := range want {
		g := got[k]
		w.ListMeta, g.ListMeta = metav1.ListMeta{}, metav1.ListMeta{}
		if g.Code != w.Code || g.Reason != w.Reason || g.Message != w.Message || !equalDetails(g.Details, w.Details) {
			t.Errorf("%s:\n got %d %s %q %+v\nkube %d %s %q %+v", k, g.Code, g.Reason, g.Message, g.Details, w.Code, w.Reason, w.Message, w.Details)
		}
	}
}

func equalDetails(a, b *metav1.StatusDetails) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// TestWebhooksCustomResources: custom resources' writes and deletes go
// through the webhooks too.
func TestWebhooksCustomResources(t *testing.T) {
	t.Parallel()
	s := startServer(t, t.TempDir())
	cfg := restConfig(t, s)
	cs := kubernetes.NewForConfigOrDie(cfg)
	c := newRawClient(t, cfg)
	ctx := context.Background()
	h := newHookServer(t)
	c.step("crd", "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", jsonCT, crCRD("hookeds", "Hooked", ""))
	c.waitServed("hookeds")

	none := admregv1.SideEffectClassNone
	fail := admregv1.Fail
	rules := []admregv1.RuleWithOperations{{
		Operations: []admregv1.OperationType{admregv1.OperationAll},
		Rule:       admregv1.Rule{APIGroups: []string{crGroup}, APIVersions: []string{"v1"}, Resources: []string{"hookeds"}},
	}}
	delRules := []admregv1.RuleWithOperations{{Operations: []admregv1.OperationType{admregv1.Delete}, Rule: rules[0].Rule}}
	if _, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, &admregv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "cr-mutate"},
		Webhooks: []admregv1.MutatingWebhook{{
			Name: "patch.example.com", ClientConfig: admregv1.WebhookClientConfig{URL: h.url("/patch"), CABundle: h.ca},
			Rules: rules, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}, FailurePolicy: &fail,
		}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &admregv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "cr-validate"},
		Webhooks: []admregv1.ValidatingWebhook{{
			Name: "deny.example.com", ClientConfig: admregv1.WebhookClientConfig{URL: h.url("/deny"), CABundle: h.ca},
			Rules: rules, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}, FailurePolicy: &fail,
			ObjectSelector: labelSel("deny", "yes"),
		}, {
			Name: "protect.example.com", ClientConfig: admregv1.WebhookClientConfig{URL: h.url("/deny"), CABundle: h.ca},
			Rules: delRules, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}, FailurePolicy: &fail,
			ObjectSelector: labelSel("protect", "yes"),
		}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	coll := "/apis/" + crGroup + "/v1/namespaces/default/hookeds"
	obj := func(name, labels string) string {
		return `{"apiVersion":"` + crGroup + `/v1","kind":"Hooked","metadata":{"name":"` + name + `","labels":{` + labels + `}}}`
	}
	var code int
	var m map[string]any
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		code, m = c.do("POST", coll+"?dryRun=All", jsonCT, obj("probe", `"deny":"yes"`))
		return code == http.StatusForbidden && len(h.requests("/patch")) > 0, nil
	})
	if err != nil {
		t.Fatalf("webhooks never took effect: %d %v", code, m)
	}
	if got := m["message"]; got != `admission webhook "deny.example.com" denied the request: no entry for probe` {
		t.Errorf("deny: %v", got)
	}
	code, m = c.do("POST", coll, jsonCT, obj("w", `"keep":"me"`))
	if code != http.StatusCreated || jsonAt(m, "metadata.labels.mutated") != `"yes"` || jsonAt(m, "metadata.labels.keep") != `"me"` {
		t.Fatalf("create: %d labels %s", code, jsonAt(m, "metadata.labels"))
	}
	reqs := h.requests("/patch")
	if last := reqs[len(reqs)-1]; last.Kind.Group != crGroup || last.Kind.Kind != "Hooked" || last.Resource.Resource != "hookeds" {
		t.Errorf("review of a custom resource: kind %v resource %v", last.Kind, last.Resource)
	}
	// Into the selector by a patch: the validating webhook refuses.
	code, m = c.do("PATCH", coll+"/w", mergePatch, `{"metadata":{"labels":{"deny":"yes"}}}`)
	if code != http.StatusForbidden {
		t.Errorf("patch into the deny selector: %d %v", code, m["message"])
	}
	// A delete goes through the validating webhooks, with the old object.
	if code, m = c.do("POST", coll, jsonCT, obj("kept", `"protect":"yes"`)); code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, m["message"])
	}
	code, m = c.do("DELETE", coll+"/kept", "", "")
	if code != http.StatusForbidden || m["message"] != `admission webhook "protect.example.com" denied the request: no entry for kept` {
		t.Errorf("delete: %d %v", code, m["message"])
	}
	reqs = h.requests("/deny")
	if last := reqs[len(reqs)-1]; last.Operation != admissionv1.Delete || len(last.OldObject.Raw) == 0 {
		t.Errorf("delete review: %s, oldObject %d bytes", last.Operation, len(last.OldObject.Raw))
	}
}

// policyAnswers binds a ValidatingAdmissionPolicy (CEL) to the configmaps
// labelled test=name on the server cs talks to, and returns the Status of
// a create it refuses; a create it allows must succeed.
func policyAnswers(t *testing.T, cs kubernetes.Interface, ns, name string) metav1.Status {
	ctx := context.Background()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	fail := admregv1.Fail
	pol := &admregv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admregv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admregv1.MatchResources{ResourceRules: []admregv1.NamedRuleWithOperations{{
				RuleWithOperations: cmRule(admregv1.Create)[0],
			}}},
			Validations: []admregv1.Validation{
				{Expression: `!object.metadata.name.startsWith("forbidden")`},
				{Expression: `!has(object.data) || object.data.size() <= 1`, Message: "at most one key"},
			},
		},
	}
	if _, err := cs.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, pol, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.AdmissionregistrationV1().ValidatingAdmissionPolicies().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	binding := &admregv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admregv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admregv1.ValidationAction{admregv1.Deny},
			MatchResources:    &admregv1.MatchResources{ObjectSelector: labelSel("test", name)},
		},
	}
	if _, err := cs.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	cms := cs.CoreV1().ConfigMaps(ns)
	cm := func(n string, data map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{"test": name}}, Data: data}
	}
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := cms.Create(ctx, cm("forbidden-probe", nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil, nil
	})
	if err != nil {
		t.Fatalf("policy never took effect: %v", err)
	}
	if _, err := cms.Create(ctx, cm("fine", map[string]string{"a": "1"}), metav1.CreateOptions{}); err != nil {
		t.Fatalf("a create the policy allows: %v", err)
	}
	_, err = cms.Create(ctx, cm("big", map[string]string{"a": "1", "b": "2"}), metav1.CreateOptions{})
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		t.Fatalf("a create the policy refuses: %v", err)
	}
	return st.Status()
}

// TestKubeValidatingAdmissionPolicy: a ValidatingAdmissionPolicy refuses
// what it should, with kube-apiserver's answer.
func TestKubeValidatingAdmissionPolicy(t *testing.T) {
	t.Parallel()
	s := startServer(t, t.TempDir())
	got := policyAnswers(t, kubernetes.NewForConfigOrDie(restConfig(t, s)), "vap", "vap-test")
	// kube-apiserver v1.37.2's answer, when it is not here to ask.
	denied := `ValidatingAdmissionPolicy 'vap-test' with binding 'vap-test' denied request: at most one key`
	want := metav1.Status{Code: http.StatusUnprocessableEntity, Reason: metav1.StatusReasonInvalid,
		Message: `configmaps "big" is forbidden: ` + denied,
		Details: &metav1.StatusDetails{Name: "big", Kind: "configmaps", Causes: []metav1.StatusCause{{Message: denied}}}}
	if _, err := kubeapiserver.Binary(); err == nil {
		want = policyAnswers(t, kubeClientset(t), "vap", "vap-test")
		t.Logf("kube-apiserver answers %d %s %q", want.Code, want.Reason, want.Message)
	}
	if got.Code != want.Code || got.Reason != want.Reason || got.Message != want.Message || !equalDetails(got.Details, want.Details) {
		t.Errorf("got  %d %s %q %+v\nwant %d %s %q %+v", got.Code, got.Reason, got.Message, got.Details, want.Code, want.Reason, want.Message, want.Details)
	}

	// With the policy and its binding gone, the server holds no admission
	// configuration at all (writes then skip the plugins): what the policy
	// refused is admitted again.
	cs := kubernetes.NewForConfigOrDie(restConfig(t, s))
	ctx := context.Background()
	if err := cs.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(ctx, "vap-test", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.AdmissionregistrationV1().ValidatingAdmissionPolicies().Delete(ctx, "vap-test", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "forbidden-probe", Labels: map[string]string{"test": "vap-test"}}}
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().ConfigMaps("vap").Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("writes the deleted policy refused are still refused: %v", err)
	}
}
