package direct_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"testing"

	"go.uber.org/goleak"

	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/server/storage/direct"
	"github.com/listwatch/listwatch/server/storage/etcd"
	"github.com/listwatch/listwatch/server/storage/etcdtest"
	"github.com/listwatch/listwatch/wire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const prefix = "/registry/pods/default/"

func pod(name, app string) []byte {
	return fmt.Appendf(nil, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q,"namespace":"default","labels":{"app":%q}}}`, name, app)
}

// fixture holds pods a..e (a, c, e with app=x; b, d with app=y) and a
// key just outside the prefix. revs[i] is the revision after the i-th
// create; mid is the revision with only a and b present.
type fixture struct {
	store *etcd.Store
	r     *direct.Reader
	revs  map[string]int64
	mid   int64
	last  int64
}

func setup(t *testing.T) fixture {
	t.Helper()
	s := etcdtest.Start(t).Store
	f := fixture{store: s, r: direct.New(s), revs: map[string]int64{}}
	ctx := context.Background()
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		app := "x"
		if n == "b" || n == "d" {
			app = "y"
		}
		rev, err := s.Create(ctx, prefix+n, pod(n, app))
		if err != nil {
			t.Fatal(err)
		}
		f.revs[n] = rev
		f.last = rev
	}
	f.mid = f.revs["b"]
	if _, err := s.Create(ctx, "/registry/pods/default0", pod("z", "x")); err != nil {
		t.Fatal(err)
	}
	return f
}

func names(t *testing.T, items []storage.KV) string {
	t.Helper()
	var out string
	for _, kv := range items {
		var o wire.PartialObject
		if err := json.Unmarshal(kv.Value, &o); err != nil {
			t.Fatal(err)
		}
		if o.Metadata.ResourceVersion != strconv.FormatInt(kv.Revision, 10) {
			t.Fatalf("%s: resourceVersion %q, revision %d", kv.Key, o.Metadata.ResourceVersion, kv.Revision)
		}
		out += o.Metadata.Name
	}
	return out
}

func labelPred(t *testing.T, sel string) storage.Predicate {
	t.Helper()
	ls, err := object.ParseLabelSelector(sel)
	if err != nil {
		t.Fatal(err)
	}
	return storage.Predicate{Label: ls}
}

// TestListResourceVersionModes covers every RV mode, without paging.
func TestListResourceVersionModes(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	cur, err := f.store.CurrentRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	future := cur + 100
	mid := f.mid
	for _, tc := range []struct {
		name      string
		opts      storage.GetListOptions
		wantNames string
		wantRev   int64
		wantErr   error
	}{
		{"unset", storage.GetListOptions{}, "abcde", cur, nil},
		{"zero", storage.GetListOptions{Mode: storage.ReadAny}, "abcde", cur, nil},
		{"zero NotOlderThan", storage.GetListOptions{Mode: storage.ReadAny}, "abcde", cur, nil},
		{"NotOlderThan old", storage.GetListOptions{Mode: storage.ReadNotOlderThan, Revision: mid}, "abcde", cur, nil},
		{"NotOlderThan future", storage.GetListOptions{Mode: storage.ReadNotOlderThan, Revision: future}, "", 0, storage.ErrTooLargeResourceVersion},
		{"legacy N without limit", legacyList(t, mid, 0), "abcde", cur, nil},
		{"legacy future without limit", legacyList(t, future, 0), "", 0, storage.ErrTooLargeResourceVersion},
		{"legacy N with limit is exact", legacyList(t, mid, 10), "ab", f.mid, nil},
		{"Exact", storage.GetListOptions{Mode: storage.ReadExact, Revision: mid}, "ab", f.mid, nil},
		{"Exact future", storage.GetListOptions{Mode: storage.ReadExact, Revision: future}, "", 0, storage.ErrTooLargeResourceVersion},
		{"Exact with selector", storage.GetListOptions{Mode: storage.ReadExact, Revision: mid, Predicate: labelPred(t, "app=y")}, "b", f.mid, nil},
		{"selector", storage.GetListOptions{Predicate: labelPred(t, "app in (x)")}, "ace", cur, nil},
		{"Exact without a revision", storage.GetListOptions{Mode: storage.ReadExact}, "", 0, direct.ErrInvalidResourceVersion},
	} {
		t.Run(tc.name, func(t *testing.T) {
			page, err := f.r.GetList(ctx, prefix, tc.opts)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := names(t, page.Items); got != tc.wantNames || page.Revision != tc.wantRev {
				t.Fatalf("got %q at %d, want %q at %d", got, page.Revision, tc.wantNames, tc.wantRev)
			}
			if page.Continue != "" || page.RemainingItemCount != nil {
				t.Fatalf("unpaged list has continue %q remaining %v", page.Continue, page.RemainingItemCount)
			}
		})
	}
}

type pageSummary struct {
	names     string
	remaining string
	rev       int64
}

// listAll follows continue tokens to the end.
func listAll(t *testing.T, r *direct.Reader, opts storage.GetListOptions, between func()) []pageSummary {
	t.Helper()
	var pages []pageSummary
	for i := 0; ; i++ {
		page, err := r.GetList(context.Background(), prefix, opts)
		if err != nil {
			t.Fatal(err)
		}
		rem := "-"
		if page.RemainingItemCount != nil {
			rem = strconv.FormatInt(*page.RemainingItemCount, 10)
		}
		pages = append(pages, pageSummary{names(t, page.Items), rem, page.Revision})
		if page.Continue == "" {
			return pages
		}
		if i > 10 {
			t.Fatal("too many pages")
		}
		if between != nil {
			between()
		}
		opts.Continue = page.Continue
		opts.Mode, opts.Revision = storage.ReadMostRecent, 0
	}
}

func TestListPaging(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	cur, _ := f.store.CurrentRevision(ctx)
	mid := f.mid
	created := false
	writeBetween := func() {
		if created {
			return
		}
		created = true
		// Neither a new key nor an update after the first page shows up.
		if _, err := f.store.Create(ctx, prefix+"bb", pod("bb", "x")); err != nil {
			t.Fatal(err)
		}
		if _, err := f.store.Update(ctx, prefix+"e", pod("e", "y"), 0); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		opts storage.GetListOptions
		want string
	}{
		{"latest limit 2", storage.GetListOptions{Limit: 2}, fmt.Sprint([]pageSummary{{"ab", "3", cur}, {"cd", "1", cur}, {"e", "-", cur}})},
		{"zero limit 2", storage.GetListOptions{Mode: storage.ReadAny, Limit: 2}, fmt.Sprint([]pageSummary{{"ab", "3", cur}, {"cd", "1", cur}, {"e", "-", cur}})},
		{"NotOlderThan limit 3", storage.GetListOptions{Mode: storage.ReadNotOlderThan, Revision: mid, Limit: 3}, fmt.Sprint([]pageSummary{{"abc", "2", cur}, {"de", "-", cur}})},
		{"Exact limit 1", storage.GetListOptions{Mode: storage.ReadExact, Revision: mid, Limit: 1}, fmt.Sprint([]pageSummary{{"a", "1", f.mid}, {"b", "-", f.mid}})},
		{"legacy limit 1", legacyList(t, mid, 1), fmt.Sprint([]pageSummary{{"a", "1", f.mid}, {"b", "-", f.mid}})},
		{"limit 5 exactly", storage.GetListOptions{Limit: 5}, fmt.Sprint([]pageSummary{{"abcde", "-", cur}})},
		// With a selector: no remaining count, pages fill up to Limit
		// matches, and the last may be empty.
		{"selector x limit 2", storage.GetListOptions{Limit: 2, Predicate: labelPred(t, "app=x")}, fmt.Sprint([]pageSummary{{"ac", "-", cur}, {"e", "-", cur}})},
		{"selector y limit 1", storage.GetListOptions{Limit: 1, Predicate: labelPred(t, "app=y")}, fmt.Sprint([]pageSummary{{"b", "-", cur}, {"d", "-", cur}, {"", "-", cur}})},
		{"selector none limit 2", storage.GetListOptions{Limit: 2, Predicate: labelPred(t, "app=none")}, fmt.Sprint([]pageSummary{{"", "-", cur}})},
		{"Exact selector limit 1", storage.GetListOptions{Mode: storage.ReadExact, Revision: mid, Limit: 1, Predicate: labelPred(t, "app=y")}, fmt.Sprint([]pageSummary{{"b", "-", f.mid}})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := fmt.Sprint(listAll(t, f.r, tc.opts, nil)); got != tc.want {
				t.Fatalf("pages %s, want %s", got, tc.want)
			}
		})
	}
	// Last, with writes between pages: the pages stay one snapshot.
	want := fmt.Sprint([]pageSummary{{"ab", "3", cur}, {"cd", "1", cur}, {"e", "-", cur}})
	if got := fmt.Sprint(listAll(t, f.r, storage.GetListOptions{Limit: 2}, writeBetween)); got != want {
		t.Fatalf("pages with writes between %s, want %s", got, want)
	}
}

func TestListContinueErrors(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	page, err := f.r.GetList(ctx, prefix, storage.GetListOptions{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	// As kube's, a token continues a list of another prefix, from its
	// start key under that prefix.
	if _, err := f.r.GetList(ctx, "/registry/pods/other/", storage.GetListOptions{Limit: 2, Continue: page.Continue}); err != nil {
		t.Fatalf("token for another prefix: %v", err)
	}
	if _, err := f.r.GetList(ctx, prefix, storage.GetListOptions{Limit: 2, Continue: "garbage!"}); !errors.Is(err, storage.ErrInvalidContinue) {
		t.Fatalf("garbage token: %v, want ErrInvalidContinue", err)
	}
	future, _ := storage.EncodeContinue(prefix, prefix+"c", page.Revision+100)
	if _, err := f.r.GetList(ctx, prefix, storage.GetListOptions{Continue: future}); !errors.Is(err, storage.ErrInvalidContinue) {
		t.Fatalf("token from the future: %v, want ErrInvalidContinue", err)
	}
	// Compact past the token's revision: the next page is 410.
	for i := 0; i < 3; i++ {
		if _, err := f.store.Update(ctx, prefix+"a", pod("a", strconv.Itoa(i)), 0); err != nil {
			t.Fatal(err)
		}
	}
	cur, _ := f.store.CurrentRevision(ctx)
	if err := f.store.Compact(ctx, cur); err != nil {
		t.Fatal(err)
	}
	var ce *storage.CompactedError
	if _, err := f.r.GetList(ctx, prefix, storage.GetListOptions{Limit: 2, Continue: page.Continue}); !errors.As(err, &ce) {
		t.Fatalf("compacted token: %v, want *CompactedError", err)
	}
	if _, err := f.r.GetList(ctx, prefix, storage.GetListOptions{Limit: 2, Continue: page.Continue, Predicate: labelPred(t, "app=x")}); !errors.As(err, &ce) {
		t.Fatalf("compacted token with selector: %v, want *CompactedError", err)
	}
	if _, err := f.r.GetList(ctx, prefix, storage.GetListOptions{Mode: storage.ReadExact, Revision: f.mid}); !errors.As(err, &ce) {
		t.Fatalf("Exact at a compacted revision: %v, want *CompactedError", err)
	}
}

// legacyList is a LIST with resourceVersion=rev and no match, through the
// server's parse.
func legacyList(t *testing.T, rev, limit int64) storage.GetListOptions {
	t.Helper()
	s, err := storage.SpecOf(wire.ListOptions{ResourceVersion: strconv.FormatInt(rev, 10), Limit: limit})
	if err != nil {
		t.Fatal(err)
	}
	return s.ListOptions(storage.Predicate{})
}
