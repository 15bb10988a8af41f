package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"testing"
)

func TestListOptionsRoundTrip(t *testing.T) {
	yes := true
	timeout := int64(30)
	o := ListOptions{
		LabelSelector: "a=b", FieldSelector: "metadata.name=x", Watch: true, AllowWatchBookmarks: true,
		ResourceVersion: "10", ResourceVersionMatch: MatchNotOlderThan, TimeoutSeconds: &timeout,
		Limit: 500, Continue: "tok", SendInitialEvents: &yes,
	}
	got, err := ParseListOptions(o.Query())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, o) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, o)
	}
	if q := (ListOptions{}).Query(); len(q) != 0 {
		t.Fatalf("zero options encode as %v", q)
	}
	for _, bad := range []string{"limit=-1", "limit=x", "timeoutSeconds=-5", "watch=maybe", "sendInitialEvents=2", "allowWatchBookmarks=?"} {
		q, _ := url.ParseQuery(bad)
		if _, err := ParseListOptions(q); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

func TestStatusHelpers(t *testing.T) {
	gr := GroupResource{Resource: "configmaps"}
	cases := []struct {
		err    *Status
		code   int32
		reason StatusReason
		msg    string
	}{
		{NewNotFound(gr, "a"), 404, ReasonNotFound, `configmaps "a" not found`},
		{NewAlreadyExists(GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "l"), 409, ReasonAlreadyExists, `leases.coordination.k8s.io "l" already exists`},
		{NewConflict(gr, "a", ConflictModified), 409, ReasonConflict, `Operation cannot be fulfilled on configmaps "a": the object has been modified; please apply your changes to the latest version and try again`},
		{NewInvalid("", "ConfigMap", "A", StatusCause{Field: "metadata.name", Message: "bad"}), 422, ReasonInvalid, `ConfigMap "A" is invalid: metadata.name: bad`},
		{NewResourceExpired("too old resource version: 1 (5)"), 410, ReasonExpired, "too old resource version: 1 (5)"},
		{NewTooManyRequests(1), 429, ReasonTooManyRequests, "Too many requests, please try again later."},
		{NewRequestEntityTooLarge(3 << 20), 413, ReasonRequestEntityTooLarge, "Request entity too large: limit is 3145728"},
		{NewUnauthorized(), 401, ReasonUnauthorized, "Unauthorized"},
	}
	for _, c := range cases {
		wrapped := fmt.Errorf("ctx: %w", c.err)
		if CodeOf(wrapped) != c.code || ReasonOf(wrapped) != c.reason || c.err.Error() != c.msg {
			t.Errorf("%s: code %d reason %q msg %q", c.msg, CodeOf(wrapped), ReasonOf(wrapped), c.err.Error())
		}
		b, _ := json.Marshal(c.err)
		var back Status
		if err := json.Unmarshal(b, &back); err != nil || back.Kind != "Status" || back.APIVersion != "v1" || back.Code != c.code {
			t.Errorf("JSON %s", b)
		}
	}
	if CodeOf(errors.New("plain")) != 0 || ReasonOf(nil) != ReasonUnknown {
		t.Fatal("non-Status errors classified")
	}
}

// FuzzParseListOptions: any query parses or errors without panicking, and
// what parses re-encodes to an equal value.
func FuzzParseListOptions(f *testing.F) {
	f.Add("limit=5&continue=x&resourceVersion=3&watch=1")
	f.Add("sendInitialEvents=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=9")
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		o, err := ParseListOptions(q)
		if err != nil {
			return
		}
		again, err := ParseListOptions(o.Query())
		if err != nil || !reflect.DeepEqual(again, o) {
			t.Fatalf("%q: %+v vs %+v (%v)", raw, o, again, err)
		}
	})
}
