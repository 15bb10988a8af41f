package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/wire"
)

// transportEndpoint is one server of TestKubeClientTransport: its name
// ("kube" or "serve") and its admin kubeconfig.
type transportEndpoint struct {
	name, kubeconfig string
}

// transportEndpoints starts listwatch serve beside the shared
// kube-apiserver and makes one namespace, of the same name, on both.
func transportEndpoints(t *testing.T) ([]transportEndpoint, string) {
	t.Helper()
	ks := kubeServer(t)
	s := startServer(t, "")
	ns := kubeNamespace(t, kubeClient(t, ks.AdminConfig()))
	eps := []transportEndpoint{{"kube", ks.KubeconfigPath}, {"serve", s.KubeconfigPath()}}
	c := endpointClient(t, eps[1].kubeconfig, nil)
	body := `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"` + ns + `"}}`
	resp, err := c.Do(t.Context(), http.MethodPost, "/api/v1/namespaces", nil, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return eps, ns
}

// endpointClient is our client for a kubeconfig, loaded as a program
// would load it; mutate adjusts the Config first.
func endpointClient(t *testing.T, kubeconfig string, mutate func(*client.Config)) *client.Client {
	t.Helper()
	cfg, err := client.LoadKubeconfig(kubeconfig, "")
	if err != nil {
		t.Fatal(err)
	}
	if mutate != nil {
		mutate(cfg)
	}
	return kubeClient(t, cfg)
}

// impersonatingKubeconfig writes, next to kubeconfig (so that its relative
// paths still hold), a copy whose current user impersonates as kubectl's
// --as flags would, and returns its path.
func impersonatingKubeconfig(t *testing.T, kubeconfig string, edit func(*clientcmdUser)) string {
	t.Helper()
	kc, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	ai := kc.AuthInfos[kc.Contexts[kc.CurrentContext].AuthInfo]
	u := clientcmdUser{}
	edit(&u)
	ai.Impersonate, ai.ImpersonateUID, ai.ImpersonateGroups, ai.ImpersonateUserExtra = u.as, u.uid, u.groups, u.extra
	path := filepath.Join(filepath.Dir(kubeconfig), fmt.Sprintf("as-%s-%d.kubeconfig", u.as, os.Getpid()))
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(path) })
	return path
}

type clientcmdUser struct {
	as, uid string
	groups  []string
	extra   map[string][]string
}

// recordedWarnings is a Config.WarningHandler that keeps every text.
type recordedWarnings struct {
	mu    sync.Mutex // guards texts
	texts []string
}

func (r *recordedWarnings) add(text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.texts = append(r.texts, text)
}

func (r *recordedWarnings) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.texts
	r.texts = nil
	slices.Sort(out)
	return out
}

// TestKubeClientTransport runs our client library against a real
// kube-apiserver and listwatch serve side by side: a kubeconfig's
// impersonation reaches the server (who it takes us for, and a 403 as the
// impersonated user), the server's warnings reach Config.WarningHandler,
// and the default User-Agent makes the test program the field manager.
func TestKubeClientTransport(t *testing.T) {
	t.Parallel()
	eps, ns := transportEndpoints(t)
	type outcome struct {
		whoAmI        map[string]any
		forbidden     string
		podWarnings   []string
		fieldWarnings []string
		manager       string
		groupsCanList bool
	}
	got := map[string]outcome{}
	for _, ep := range eps {
		var o outcome
		ctx := t.Context()

		// Impersonation from the kubeconfig: who the server takes us for.
		jane := impersonatingKubeconfig(t, ep.kubeconfig, func(u *clientcmdUser) {
			u.as, u.uid, u.groups = "lw-jane", "u-1", []string{"lw-devs"}
			u.extra = map[string][]string{"example.com/team name": {"a", "b"}}
		})
		c := endpointClient(t, jane, nil)
		review := `{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`
		resp, err := c.Do(ctx, http.MethodPost, "/apis/authentication.k8s.io/v1/selfsubjectreviews", nil, []byte(review))
		if err != nil {
			t.Fatalf("%s: self review as lw-jane: %v", ep.name, err)
		}
		var ssr struct {
			Status struct {
				UserInfo map[string]any `json:"userInfo"`
			} `json:"status"`
		}
		if err := decodeClose(resp, &ssr); err != nil {
			t.Fatal(err)
		}
		o.whoAmI = ssr.Status.UserInfo

		// As lw-jane, listing is forbidden: the kubeconfig's credentials
		// (an admin's) are not used in her place.
		cms := client.NewResource[*object.Unstructured](c, client.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(ns)
		_, err = cms.List(ctx, wire.ListOptions{})
		if !client.IsForbidden(err) {
			t.Fatalf("%s: list as lw-jane: %v, want 403", ep.name, err)
		}
		o.forbidden = err.Error()

		// Groups are sent too: in system:masters she may list.
		masters := impersonatingKubeconfig(t, ep.kubeconfig, func(u *clientcmdUser) {
			u.as, u.groups = "lw-jane-admin", []string{"system:masters"}
		})
		mc := endpointClient(t, masters, nil)
		_, err = client.NewResource[*object.Unstructured](mc, client.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(ns).List(ctx, wire.ListOptions{})
		o.groupsCanList = err == nil

		// Warnings: a deprecated node selector label on a pod, and
		// unknown fields under fieldValidation=Warn.
		var warnings recordedWarnings
		wc := endpointClient(t, ep.kubeconfig, func(cfg *client.Config) { cfg.WarningHandler = warnings.add })
		pod := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"warned"},"spec":{"nodeSelector":{"beta.kubernetes.io/os":"linux"},"containers":[{"name":"c","image":"nginx"}]}}`
		resp, err = wc.Do(ctx, http.MethodPost, "/api/v1/namespaces/"+ns+"/pods", nil, []byte(pod))
		if err != nil {
			t.Fatalf("%s: pod: %v", ep.name, err)
		}
		_ = resp.Body.Close()
		o.podWarnings = warnings.take()
		cm := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"warned"},"data":{"k":"v"},"spec":1,"bogus":{"x":2}}`
		resp, err = wc.Do(ctx, http.MethodPost, "/api/v1/namespaces/"+ns+"/configmaps", url.Values{"fieldValidation": {"Warn"}}, []byte(cm))
		if err != nil {
			t.Fatalf("%s: configmap: %v", ep.name, err)
		}
		_ = resp.Body.Close()
		o.fieldWarnings = warnings.take()

		// The default User-Agent names this program the field manager.
		obj, err := client.NewResource[*object.Unstructured](wc, client.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(ns).Get(ctx, "warned")
		if err != nil {
			t.Fatal(err)
		}
		if mf, ok := obj.Nested("metadata", "managedFields"); ok {
			if entries, ok := mf.([]any); ok && len(entries) == 1 {
				o.manager, _ = entries[0].(map[string]any)["manager"].(string)
			}
		}
		got[ep.name] = o
	}

	kube, serve := got["kube"], got["serve"]
	want := filepath.Base(os.Args[0])
	if kube.manager != want {
		t.Errorf("kube: manager %q, want the program's name %q", kube.manager, want)
	}
	wantWho := map[string]any{"username": "lw-jane", "uid": "u-1",
		"groups": []any{"lw-devs", "system:authenticated"},
		"extra":  map[string]any{"example.com/team name": []any{"a", "b"}}}
	if !reflect.DeepEqual(kube.whoAmI, wantWho) {
		t.Errorf("kube: impersonated user %v, want %v", kube.whoAmI, wantWho)
	}
	if !strings.Contains(kube.forbidden, `User "lw-jane" cannot list resource "configmaps"`) || !kube.groupsCanList {
		t.Errorf("kube: forbidden %q, in system:masters may list: %v", kube.forbidden, kube.groupsCanList)
	}
	if len(kube.podWarnings) == 0 || !strings.Contains(strings.Join(kube.podWarnings, "\n"), "beta.kubernetes.io/os") ||
		len(kube.fieldWarnings) != 2 {
		t.Errorf("kube: pod warnings %q, field warnings %q", kube.podWarnings, kube.fieldWarnings)
	}
	if !reflect.DeepEqual(kube, serve) {
		t.Errorf("kube and serve differ:\n kube  %+v\n serve %+v", kube, serve)
	}
}

// decodeClose decodes resp's JSON body into out and closes it.
func decodeClose(resp *http.Response, out any) error {
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(out)
}
