package storage

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/listwatch/listwatch/wire"
)

// TestParseReadSpec runs the parse over every combination of the
// parameters that decide a read (watch, resourceVersion, match, limit,
// continue, sendInitialEvents, allowWatchBookmarks) and checks each
// against kube-apiserver's rules, written out independently below.
func TestParseReadSpec(t *testing.T) {
	bools := []string{"", "true", "false"}
	tok, err := EncodeContinue("/registry/x/", "/registry/x/a", 5)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, watch := range []string{"", "true"} {
		for _, rv := range []string{"", "0", "7", "00", "x", "-1", "9223372036854775808", "18446744073709551616"} {
			for _, match := range []string{"", wire.MatchExact, wire.MatchNotOlderThan, "Bogus"} {
				for _, limit := range []string{"", "0", "5"} {
					for _, cont := range []string{"", tok} {
						for _, sie := range bools {
							for _, bm := range bools {
								q := url.Values{}
								set := func(k, v string) {
									if v != "" {
										q.Set(k, v)
									}
								}
								set("watch", watch)
								set("resourceVersion", rv)
								set("resourceVersionMatch", match)
								set("limit", limit)
								set("continue", cont)
								set("sendInitialEvents", sie)
								set("allowWatchBookmarks", bm)
								n++
								checkSpec(t, q)
							}
						}
					}
				}
			}
		}
	}
	t.Logf("%d combinations", n)
}

// checkSpec compares ParseReadSpec(q) with the expected outcome.
func checkSpec(t *testing.T, q url.Values) {
	t.Helper()
	watch := q.Get("watch") == "true"
	rv, match, cont := q.Get("resourceVersion"), q.Get("resourceVersionMatch"), q.Get("continue")
	limited := q.Get("limit") == "5"
	sie := q.Get("sendInitialEvents")
	bm := q.Get("allowWatchBookmarks") == "true"

	var code int
	var causes []string
	// A resourceVersion past int64 parses (kube's versioner's is a
	// uint64): a revision no store reaches.
	beyond := rv == "9223372036854775808"
	// "00" parses as 0, but kube compares the string with "0" where it
	// defaults, validates and decides what its cache serves.
	zero := rv == "00"
	badRV := rv != "" && rv != "0" && rv != "7" && !beyond && !zero
	if watch && sie == "" && match == "" && (rv == "" || rv == "0") {
		// kube 1.37's default (WatchList on): a watch from "now" or "any"
		// sends its initial events, ended by a bookmark.
		sie, match = "true", wire.MatchNotOlderThan
	}
	// The options are validated before the store reads the
	// resourceVersion, so a 422 comes before a 400.
	switch {
	case watch:
		if sie != "" && match != wire.MatchNotOlderThan {
			causes = append(causes, "resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan")
		}
		if match != "" && sie == "" {
			causes = append(causes, "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided")
		}
		if match != "" && match != wire.MatchNotOlderThan {
			causes = append(causes, fmt.Sprintf(`resourceVersionMatch: Unsupported value: %q: supported values: "NotOlderThan"`, match))
		}
		if match != "" && cont != "" {
			causes = append(causes, "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is provided")
		}
	default:
		if match != "" && rv == "" {
			causes = append(causes, "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided")
		}
		if match != "" && cont != "" {
			causes = append(causes, "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is provided")
		}
		if match != "" && match != wire.MatchExact && match != wire.MatchNotOlderThan {
			causes = append(causes, fmt.Sprintf(`resourceVersionMatch: Unsupported value: %q: supported values: "Exact", "NotOlderThan", ""`, match))
		}
		if match == wire.MatchExact && rv == "0" {
			causes = append(causes, `resourceVersionMatch: Forbidden: resourceVersionMatch "exact" is forbidden for resourceVersion "0"`)
		}
		if sie != "" {
			causes = append(causes, "sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list")
		}
	}
	switch {
	case len(causes) > 0:
		code = 422
	case badRV, !watch && cont != "" && rv != "" && rv != "0":
		code = 400
	}

	spec, err := ParseReadSpec(q)
	desc := q.Encode()
	if code != 0 {
		st, ok := err.(*wire.Status)
		if !ok {
			t.Fatalf("%s: error %v (%T), want a %d Status", desc, err, err, code)
		}
		if int(st.Code) != code {
			t.Fatalf("%s: %d %s, want %d", desc, st.Code, st.Message, code)
		}
		switch code {
		case 400:
			want := `invalid resource version: "` + rv + `"`
			if _, err := strconv.ParseUint(rv, 10, 64); err != nil {
				// kube's versioner's message (kube-apiserver v1.37.2).
				want = fmt.Sprintf("invalid resource version: resourceVersion: Invalid value: %q: %v", rv, err)
			}
			if !watch && cont != "" {
				// kube's store never parses a continued list's
				// resourceVersion.
				want = "specifying resource version is not allowed when using continue"
			}
			if st.Reason != wire.ReasonBadRequest || st.Message != want {
				t.Fatalf("%s: %s %q, want BadRequest %q", desc, st.Reason, st.Message, want)
			}
		case 422:
			want := `ListOptions.meta.k8s.io "" is invalid: ` + strings.Join(causes, ", ")
			if len(causes) > 1 {
				want = `ListOptions.meta.k8s.io "" is invalid: [` + strings.Join(causes, ", ") + "]"
			}
			if st.Reason != wire.ReasonInvalid || st.Message != want || st.Details == nil ||
				st.Details.Kind != "ListOptions" || st.Details.Group != "meta.k8s.io" || len(st.Details.Causes) != len(causes) {
				t.Fatalf("%s: %s %q %+v\nwant Invalid %q", desc, st.Reason, st.Message, st.Details, want)
			}
		}
		return
	}
	if err != nil {
		t.Fatalf("%s: %v", desc, err)
	}

	// The mode, by Kubernetes' resourceVersion semantics.
	var mode ReadMode
	var rev int64
	switch {
	case rv == "":
		mode = ReadMostRecent
	case rv == "0":
		mode = ReadAny
	case zero && !watch && (match == wire.MatchExact || match == "" && limited):
		mode = ReadMostRecent // the newest, from etcd
	case zero:
		mode = ReadAny
	case watch && sie == "true":
		mode, rev = ReadNotOlderThan, 7
	case watch:
		mode, rev = ReadExact, 7
	case match == wire.MatchExact, match == "" && limited:
		mode, rev = ReadExact, 7
	default:
		mode, rev = ReadNotOlderThan, 7
	}
	var wantBeyond uint64
	if beyond && rev != 0 {
		rev, wantBeyond = math.MaxInt64, 9223372036854775808
	}
	if spec.Mode != mode || spec.Revision != rev || spec.Beyond != wantBeyond {
		t.Fatalf("%s: %v at %d (beyond %d), want %v at %d (beyond %d)", desc, spec.Mode, spec.Revision, spec.Beyond, mode, rev, wantBeyond)
	}
	if spec.Watch != watch || spec.Continue != cont || spec.AllowBookmarks != bm || (spec.Limit == 5) != limited ||
		(spec.SendInitialEvents == nil) != (sie == "") || (sie != "" && *spec.SendInitialEvents != (sie == "true")) {
		t.Fatalf("%s: %+v", desc, spec)
	}
	if watch {
		send, end := spec.WatchOptions(Predicate{}).InitialEvents()
		wantSend := sie == "true" || (sie == "" && (rv == "" || rv == "0" || zero))
		if send != wantSend || end != (sie == "true" && bm) {
			t.Fatalf("%s: initial events %v, end %v", desc, send, end)
		}
	}
	roundTrip(t, spec)
}

// roundTrip checks that spec's query parses back to spec.
func roundTrip(t *testing.T, spec ReadSpec) {
	t.Helper()
	enc := spec.Options().Query().Encode()
	q, err := url.ParseQuery(enc)
	if err != nil {
		t.Fatalf("%+v encodes to %q: %v", spec, enc, err)
	}
	back, err := ParseReadSpec(q)
	if err != nil {
		t.Fatalf("%+v encodes to %q, which fails: %v", spec, enc, err)
	}
	if !reflect.DeepEqual(back, spec) {
		t.Fatalf("%+v encodes to %q, which parses to %+v", spec, enc, back)
	}
}

// TestParseWatchSpec: a /watch/ path's options, validated as a list's,
// are served as a watch's: a resourceVersion is where the changes start.
// A watch's continue token is dropped unread, as kube's watch drops it,
// though a list's rules about it hold on a /watch/ path (code 0: none).
func TestParseWatchSpec(t *testing.T) {
	for _, tc := range []struct {
		query string
		want  ReadSpec
		code  int32
	}{
		{"", ReadSpec{Watch: true}, 0},
		{"resourceVersion=0", ReadSpec{Watch: true, Mode: ReadAny}, 0},
		{"resourceVersion=00", ReadSpec{Watch: true, Mode: ReadAny}, 0},
		{"resourceVersion=00&limit=5", ReadSpec{Watch: true, Mode: ReadAny, Limit: 5}, 0},
		{"watch=1&resourceVersion=00", ReadSpec{Watch: true, Mode: ReadAny}, 0},
		{"watch=1&resourceVersion=000&sendInitialEvents=false&resourceVersionMatch=NotOlderThan", ReadSpec{Watch: true, Mode: ReadAny, SendInitialEvents: ptrTo(false)}, 0},
		{"resourceVersion=7", ReadSpec{Watch: true, Mode: ReadExact, Revision: 7}, 0},
		{"resourceVersion=7&resourceVersionMatch=NotOlderThan", ReadSpec{Watch: true, Mode: ReadExact, Revision: 7}, 0},
		{"resourceVersion=7&limit=5", ReadSpec{Watch: true, Mode: ReadExact, Revision: 7, Limit: 5}, 0},
		{"watch=1&resourceVersion=7&sendInitialEvents=true&resourceVersionMatch=NotOlderThan", ReadSpec{Watch: true, Mode: ReadNotOlderThan, Revision: 7, SendInitialEvents: ptrTo(true)}, 0},
		{"continue=bogus", ReadSpec{Watch: true}, 0},
		{"continue=bogus&resourceVersion=7", ReadSpec{Watch: true, Mode: ReadExact, Revision: 7}, 0},
		{"continue=bogus&resourceVersion=7&limit=2", ReadSpec{Watch: true, Mode: ReadExact, Revision: 7, Limit: 2}, 0},
		{"watch=1&continue=bogus&resourceVersion=7", ReadSpec{Watch: true, Mode: ReadExact, Revision: 7}, 0},
		{"continue=bogus&resourceVersion=7&resourceVersionMatch=NotOlderThan", ReadSpec{}, 422},
		{"watch=1&continue=bogus", ReadSpec{}, 422}, // kube's default NotOlderThan, with a continue
		{"continue=bogus&limit=x", ReadSpec{}, 400},
		// A resourceVersion past int64 is a revision no store reaches.
		{"resourceVersion=18446744073709551615", ReadSpec{Watch: true, Mode: ReadExact, Revision: math.MaxInt64, Beyond: math.MaxUint64}, 0},
		{"watch=1&resourceVersion=9223372036854775808&sendInitialEvents=true&resourceVersionMatch=NotOlderThan",
			ReadSpec{Watch: true, Mode: ReadNotOlderThan, Revision: math.MaxInt64, Beyond: 9223372036854775808, SendInitialEvents: ptrTo(true)}, 0},
		// One kube's versioner does not parse is an
		// InvalidResourceVersionError (code 500 here: its Status), with
		// the selectors the server reads before it.
		{"watch=1&resourceVersion=abc&labelSelector=a%3Db&fieldSelector=metadata.name%3Dx", ReadSpec{Watch: true, LabelSelector: "a=b", FieldSelector: "metadata.name=x"}, 500},
		{"watch=1&resourceVersion=-1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan", ReadSpec{Watch: true, SendInitialEvents: ptrTo(true)}, 500},
		{"resourceVersion=18446744073709551616", ReadSpec{}, 500},
		{"watch=1&resourceVersion=1.5&resourceVersionMatch=Exact", ReadSpec{}, 422},
	} {
		q, _ := url.ParseQuery(tc.query)
		got, err := ParseWatchSpec(q)
		var code int32
		var st *wire.Status
		var rv *InvalidResourceVersionError
		switch {
		case errors.As(err, &st):
			code = st.Code
		case errors.As(err, &rv):
			// kube's watch of a resourceVersion its versioner does
			// not parse (kube-apiserver v1.37.2): a 500 with the
			// versioner's message and no reason.
			st := rv.Status()
			code = st.Code
			_, perr := strconv.ParseUint(q.Get("resourceVersion"), 10, 64)
			want := fmt.Sprintf("resourceVersion: Invalid value: %q: %v", q.Get("resourceVersion"), perr)
			if st.Message != want || st.Reason != "" || st.Status != wire.StatusFailure || st.Details != nil {
				t.Errorf("%s: %+v, want a 500 %q", tc.query, st, want)
			}
			// A list (ParseReadSpec) of it is kube's 400.
			if _, lerr := ParseReadSpec(q); !errors.As(lerr, &st) || st.Code != 400 || st.Message != "invalid resource version: "+want {
				t.Errorf("%s: list: %v, want a 400", tc.query, lerr)
			}
		case err != nil:
			code = -1
		}
		if code != tc.code || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v %v, want %+v (code %d)", tc.query, got, err, tc.want, tc.code)
		}
	}
}

// TestParseReadSpecQuirks: details of the syntax that the table does not
// vary.
func TestParseReadSpecQuirks(t *testing.T) {
	tok, err := EncodeContinue("/registry/x/", "/registry/x/a", 5)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		query string
		want  ReadSpec
	}{
		// Leading zeros are a decimal, as with strconv.ParseUint in kube.
		{"resourceVersion=007", ReadSpec{Mode: ReadNotOlderThan, Revision: 7}},
		{"resourceVersion=9223372036854775807&limit=1", ReadSpec{Mode: ReadExact, Revision: 9223372036854775807, Limit: 1}},
		// "0" with leading zeros is 0, but no "0" to kube's handler and
		// cacher: no watch-list default, a limit honoured, Exact allowed.
		{"resourceVersion=000", ReadSpec{Mode: ReadAny}},
		{"resourceVersion=00&resourceVersionMatch=NotOlderThan&limit=2", ReadSpec{Mode: ReadAny, Limit: 2}},
		{"resourceVersion=00&limit=2", ReadSpec{Mode: ReadMostRecent, Limit: 2}},
		{"resourceVersion=00&resourceVersionMatch=Exact", ReadSpec{Mode: ReadMostRecent}},
		{"watch=1&resourceVersion=00&allowWatchBookmarks=true", ReadSpec{Watch: true, Mode: ReadAny, AllowBookmarks: true}},
		// kube's parameter codec: any boolean but "false" (in any case)
		// and "0" is true; a negative limit is no limit.
		{"watch=F&resourceVersion=3", ReadSpec{Watch: true, Mode: ReadExact, Revision: 3}},
		{"watch=yes&allowWatchBookmarks=2", ReadSpec{Watch: true, AllowBookmarks: true, SendInitialEvents: ptrTo(true)}},
		{"watch=FALSE&resourceVersion=3", ReadSpec{Mode: ReadNotOlderThan, Revision: 3}},
		{"watch=0&resourceVersion=3", ReadSpec{Mode: ReadNotOlderThan, Revision: 3}},
		{"limit=-1", ReadSpec{}},
		// A watch from "now" sends initial events (kube 1.37's default).
		{"watch=1&timeoutSeconds=-1", ReadSpec{Watch: true, SendInitialEvents: ptrTo(true), TimeoutSeconds: ptrTo(int64(-1))}},
		{"continue=" + tok + "&resourceVersion=0&limit=2", ReadSpec{Mode: ReadAny, Limit: 2, Continue: tok}},
		{"labelSelector=a%3Db&fieldSelector=metadata.name%3Dx&timeoutSeconds=5", ReadSpec{LabelSelector: "a=b", FieldSelector: "metadata.name=x", TimeoutSeconds: ptrTo(int64(5))}},
	} {
		q, _ := url.ParseQuery(tc.query)
		got, err := ParseReadSpec(q)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v %v, want %+v", tc.query, got, err, tc.want)
		}
	}
	for _, bad := range []string{"limit=x", "timeoutSeconds=x", "resourceVersion=+1", "resourceVersion=%201", "resourceVersion=1%20", "resourceVersion=+0",
		"continue=abc&resourceVersion=1", "continue=" + tok + "&resourceVersion=00", "labelSelector=a%3D%3D%3Db"} {
		q, _ := url.ParseQuery(bad)
		_, err := ParseReadSpec(q)
		if st, ok := err.(*wire.Status); !ok || st.Code != 400 {
			t.Errorf("%s: %v, want a 400", bad, err)
		}
	}
}

// TestListPosition: a continue token overrides the mode with an exact
// read at its revision, from its start key under the listed prefix.
func TestListPosition(t *testing.T) {
	tok, err := EncodeContinue("/registry/pods/", "/registry/pods/ns/b\x00", 42)
	if err != nil {
		t.Fatal(err)
	}
	o := ReadSpec{Mode: ReadAny, Continue: tok}.ListOptions(Predicate{})
	pos, err := o.Position("/registry/pods/")
	want := ListPosition{Mode: ReadExact, Revision: 42, Start: "/registry/pods/ns/b\x00", Continued: true}
	if err != nil || pos != want {
		t.Fatalf("%+v %v, want %+v", pos, err, want)
	}
	if pos, err := o.Position("/registry/pods/other/"); err != nil || pos.Start != "/registry/pods/other/ns/b\x00" {
		t.Fatalf("another prefix: %+v %v", pos, err)
	}
	o = ReadSpec{Mode: ReadNotOlderThan, Revision: 3}.ListOptions(Predicate{})
	if pos, err := o.Position("/x/"); err != nil || pos != (ListPosition{Mode: ReadNotOlderThan, Revision: 3}) {
		t.Fatalf("%+v %v", pos, err)
	}
}

func ptrTo[T any](v T) *T { return &v }

// FuzzParseReadSpec: the parse never panics; an error is a 400 or 422
// Status; a spec that parses is consistent (a revision exactly when the
// mode needs one) and re-encodes to a query that parses to the same spec.
func FuzzParseReadSpec(f *testing.F) {
	for _, s := range []string{
		"", "resourceVersion=0", "resourceVersion=5&limit=2", "resourceVersion=5&resourceVersionMatch=Exact",
		"resourceVersion=0&resourceVersionMatch=Exact", "resourceVersionMatch=NotOlderThan",
		"watch=true&resourceVersion=5", "watch=1&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan",
		"watch=true&sendInitialEvents=false&resourceVersionMatch=NotOlderThan&resourceVersion=9",
		"continue=abc&resourceVersion=3", "limit=-1", "resourceVersion=18446744073709551615", "watch=F&timeoutSeconds=3",
		"labelSelector=a%3Db&fieldSelector=x&continue=%00", "watch=1&resourceVersion=00", "resourceVersion=00&limit=3",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		spec, err := ParseReadSpec(q)
		if err != nil {
			st, ok := err.(*wire.Status)
			if !ok || (st.Code != 400 && st.Code != 422) {
				t.Fatalf("%q: error %v (%T), want a 400 or 422 Status", raw, err, err)
			}
			return
		}
		hasRev := spec.Mode == ReadNotOlderThan || spec.Mode == ReadExact
		if spec.Mode > ReadExact || hasRev != (spec.Revision > 0) || spec.Revision < 0 {
			t.Fatalf("%q: mode %v with revision %d", raw, spec.Mode, spec.Revision)
		}
		if spec.Continue != "" && !spec.Watch && hasRev {
			t.Fatalf("%q: a continued list with a revision", raw)
		}
		roundTrip(t, spec)
	})
}
