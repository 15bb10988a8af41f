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
	"github.com/listwatch/listwatch/storage"
	"github.com/listwatch/listwatch/storage/direct"
	"github.com/listwatch/listwatch/storage/etcd"
	"github.com/listwatch/listwatch/storage/etcdtest"
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
	future := strconv.FormatInt(cur+100, 10)
	mid := strconv.FormatInt(f.mid, 10)
	for _, tc := range []struct {
		name      string
		opts      storage.GetListOptions
		wantNames string
		wantRev   int64
		wantErr   error
	}{
		{"unset", storage.GetListOptions{}, "abcde", cur, nil},
		{"zero", storage.GetListOptions{ResourceVersion: "0"}, "abcde", cur, nil},
		{"zero NotOlderThan", storage.GetListOptions{ResourceVersion: "0", ResourceVersionMatch: wire.MatchNotOlderThan}, "abcde", cur, nil},
		{"NotOlderThan old", storage.GetListOptions{ResourceVersion: mid, ResourceVersionMatch: wire.MatchNotOlderThan}, "abcde", cur, nil},
		{"NotOlderThan future", storage.GetListOptions{ResourceVersion: future, ResourceVersionMatch: wire.MatchNotOlderThan}, "", 0, storage.ErrTooLargeResourceVersion},
		{"legacy N without limit", storage.GetListOptions{ResourceVersion: mid}, "abcde", cur, nil},
		{"legacy future without limit", storage.GetListOptions{ResourceVersion: future}, "", 0, storage.ErrTooLargeResourceVersion},
		{"legacy N with limit is exact", storage.GetListOptions{ResourceVersion: mid, Limit: 10}, "ab", f.mid, nil},
		{"Exact", storage.GetListOptions{ResourceVersion: mid, ResourceVersionMatch: wire.MatchExact}, "ab", f.mid, nil},
		{"Exact future", storage.GetListOptions{ResourceVersion: future, ResourceVersionMatch: wire.MatchExact}, "", 0, storage.ErrTooLargeResourceVersion},
		{"Exact with selector", storage.GetListOptions{ResourceVersion: mid, ResourceVersionMatch: wire.MatchExact, Predicate: labelPred(t, "app=y")}, "b", f.mid, nil},
		{"selector", storage.GetListOptions{Predicate: labelPred(t, "app in (x)")}, "ace", cur, nil},
		{"bad RV", storage.GetListOptions{ResourceVersion: "abc"}, "", 0, direct.ErrInvalidResourceVersion},
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
		opts.ResourceVersion, opts.ResourceVersionMatch = "", ""
	}
}

func TestListPaging(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	cur, _ := f.store.CurrentRevision(ctx)
	mid := strconv.FormatInt(f.mid, 10)
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
		{"zero limit 2", storage.GetListOptions{ResourceVersion: "0", Limit: 2}, fmt.Sprint([]pageSummary{{"ab", "3", cur}, {"cd", "1", cur}, {"e", "-", cur}})},
		{"NotOlderThan limit 3", storage.GetListOptions{ResourceVersion: mid, ResourceVersionMatch: wire.MatchNotOlderThan, Limit: 3}, fmt.Sprint([]pageSummary{{"abc", "2", cur}, {"de", "-", cur}})},
		{"Exact limit 1", storage.GetListOptions{ResourceVersion: mid, ResourceVersionMatch: wire.MatchExact, Limit: 1}, fmt.Sprint([]pageSummary{{"a", "1", f.mid}, {"b", "-", f.mid}})},
		{"legacy limit 1", storage.GetListOptions{ResourceVersion: mid, Limit: 1}, fmt.Sprint([]pageSummary{{"a", "1", f.mid}, {"b", "-", f.mid}})},
		{"limit 5 exactly", storage.GetListOptions{Limit: 5}, fmt.Sprint([]pageSummary{{"abcde", "-", cur}})},
		// With a selector: no remaining count, pages fill up to Limit
		// matches, and the last may be empty.
		{"selector x limit 2", storage.GetListOptions{Limit: 2, Predicate: labelPred(t, "app=x")}, fmt.Sprint([]pageSummary{{"ac", "-", cur}, {"e", "-", cur}})},
		{"selector y limit 1", storage.GetListOptions{Limit: 1, Predicate: labelPred(t, "app=y")}, fmt.Sprint([]pageSummary{{"b", "-", cur}, {"d", "-", cur}, {"", "-", cur}})},
		{"selector none limit 2", storage.GetListOptions{Limit: 2, Predicate: labelPred(t, "app=none")}, fmt.Sprint([]pageSummary{{"", "-", cur}})},
		{"Exact selector limit 1", storage.GetListOptions{ResourceVersion: mid, ResourceVersionMatch: wire.MatchExact, Limit: 1, Predicate: labelPred(t, "app=y")}, fmt.Sprint([]pageSummary{{"b", "-", f.mid}})},
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
	if _, err := f.r.GetList(ctx, "/registry/pods/other/", storage.GetListOptions{Limit: 2, Continue: page.Continue}); !errors.Is(err, storage.ErrInvalidContinue) {
		t.Fatalf("token for another prefix: %v, want ErrInvalidContinue", err)
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
	if _, err := f.r.GetList(ctx, prefix, storage.GetListOptions{ResourceVersion: strconv.FormatInt(f.mid, 10), ResourceVersionMatch: wire.MatchExact}); !errors.As(err, &ce) {
		t.Fatalf("Exact at a compacted revision: %v, want *CompactedError", err)
	}
}
