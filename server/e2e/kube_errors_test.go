package e2e

import (
	"errors"
	"testing"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/server/internal/testsupport/kubeapiserver"
	"github.com/listwatch/listwatch/wire"
)

// kubeStatus is the *wire.Status err carries, or fails the test.
func kubeStatus(t *testing.T, err error) *wire.Status {
	t.Helper()
	var st *wire.Status
	if !errors.As(err, &st) {
		t.Fatalf("error %v (%T) carries no Status", err, err)
	}
	return st
}

// TestKubeTypedErrors checks that kube's answers surface as our typed
// errors, with kube's code and reason.
func TestKubeTypedErrors(t *testing.T) {
	t.Parallel()
	s := kubeServer(t)
	c := kubeClient(t, s.AdminConfig())
	ns := kubeNamespace(t, c)
	ctx := t.Context()
	cms := client.NewResource[*object.Unstructured](c, configMapsGVR).Namespace(ns)

	_, err := cms.Get(ctx, "missing")
	if st := kubeStatus(t, err); !client.IsNotFound(err) || st.Code != 404 || st.Details == nil || st.Details.Name != "missing" {
		t.Fatalf("get missing: %v %+v", err, st)
	}
	first, err := cms.Create(ctx, unstructuredCM("dup"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = cms.Create(ctx, unstructuredCM("dup"))
	if st := kubeStatus(t, err); !client.IsAlreadyExists(err) || st.Code != 409 {
		t.Fatalf("create twice: %v %+v", err, st)
	}
	// A write from the first version after another has landed: 409 Conflict.
	if _, err := cms.Patch(ctx, "dup", client.MergePatch, []byte(`{"data":{"k":"changed"}}`)); err != nil {
		t.Fatal(err)
	}
	first.SetNested("stale", "data", "k")
	_, err = cms.Update(ctx, first)
	if st := kubeStatus(t, err); !client.IsConflict(err) || st.Code != 409 {
		t.Fatalf("stale update: %v %+v", err, st)
	}
	_, err = cms.Create(ctx, unstructuredCM("Not_A_Name"))
	if st := kubeStatus(t, err); !client.IsInvalid(err) || st.Code != 422 {
		t.Fatalf("bad name: %v %+v", err, st)
	}
	_, err = cms.Delete(ctx, "missing", wire.DeleteOptions{})
	if !client.IsNotFound(err) {
		t.Fatalf("delete missing: %v", err)
	}
	// A list at a compacted resourceVersion: 410 Expired. The resource
	// has no watch cache, so etcd answers; a cached resource may still
	// serve an old exact revision from the cache's snapshots (kube forgets
	// them only when its own compactor runs, every 5 minutes).
	pts := client.NewResource[*object.Unstructured](c, client.GroupVersionResource{Version: "v1", Resource: kubeUncachedResource}).Namespace(ns)
	l, err := pts.List(ctx, wire.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A write, so that compacting at the current revision removes the
	// list's.
	if _, err := cms.Create(ctx, unstructuredCM("later")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = pts.List(ctx, wire.ListOptions{ResourceVersion: l.Metadata.ResourceVersion, ResourceVersionMatch: "Exact"})
	if st := kubeStatus(t, err); !client.IsGone(err) || st.Code != 410 || st.Reason != wire.ReasonExpired {
		t.Fatalf("exact list at a compacted revision: %v %+v", err, st)
	}
}

// whoAmI asks the server who c authenticates as (SelfSubjectReview).
func whoAmI(t *testing.T, c *client.Client) (string, []string, error) {
	t.Helper()
	r := client.NewResource[*object.Unstructured](c, client.GroupVersionResource{Group: "authentication.k8s.io", Version: "v1", Resource: "selfsubjectreviews"})
	req := &object.Unstructured{}
	req.SetAPIVersion("authentication.k8s.io/v1")
	req.SetKind("SelfSubjectReview")
	got, err := r.Create(t.Context(), req)
	if err != nil {
		return "", nil, err
	}
	name, _ := got.Nested("status", "userInfo", "username")
	var groups []string
	if gs, ok := got.Nested("status", "userInfo", "groups"); ok {
		for _, g := range gs.([]any) {
			groups = append(groups, g.(string))
		}
	}
	s, _ := name.(string)
	return s, groups, nil
}

// TestKubeAuthentication: bearer token, client certificate and the
// kubeconfig each authenticate as the right user; an ordinary user is
// Forbidden where RBAC says so; a wrong token is Unauthorized.
func TestKubeAuthentication(t *testing.T) {
	t.Parallel()
	s := kubeServer(t)
	kc, err := client.LoadKubeconfig(s.KubeconfigPath, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		cfg    *client.Config
		user   string
		master bool
	}{
		{"admin token", s.AdminConfig(), "admin", true},
		{"admin client certificate", s.AdminCertConfig(), "admin", true},
		{"kubeconfig", kc, "admin", true},
		{"user token", s.UserConfig(), kubeapiserver.UserName, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := kubeClient(t, tc.cfg)
			user, groups, err := whoAmI(t, c)
			if err != nil {
				t.Fatal(err)
			}
			master := false
			for _, g := range groups {
				master = master || g == "system:masters"
			}
			if user != tc.user || master != tc.master {
				t.Fatalf("authenticated as %q %v, want %q (system:masters %v)", user, groups, tc.user, tc.master)
			}
			_, err = client.NewResource[*object.Unstructured](c, configMapsGVR).Namespace("default").List(t.Context(), wire.ListOptions{Limit: 1})
			if tc.master && err != nil {
				t.Fatalf("admin list: %v", err)
			}
			if !tc.master {
				if st := kubeStatus(t, err); !client.IsForbidden(err) || st.Code != 403 {
					t.Fatalf("user list: %v %+v", err, st)
				}
			}
		})
	}
	bad := s.UserConfig()
	bad.BearerToken = "not-a-token"
	_, _, err = whoAmI(t, kubeClient(t, bad))
	if st := kubeStatus(t, err); !client.IsUnauthorized(err) || st.Code != 401 {
		t.Fatalf("wrong token: %v %+v", err, st)
	}
}
