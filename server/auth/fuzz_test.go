package auth

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/listwatch/listwatch/server/request"
)

// FuzzParseTokenFile checks ParseTokenFile against a plain reading of the
// same CSV: each non-empty token maps to the user of its last record, and
// nothing else authenticates.
func FuzzParseTokenFile(f *testing.F) {
	f.Add("token1,user1,uid1\ntoken2,user2,uid2,\"g1,g2\"\n")
	f.Add("\n\n,empty,0\ndup,a,1\ndup,b,2\n")
	f.Add("\"q\"\"uote\",u,1\r\nx,y\n")
	f.Add("\"unterminated")
	f.Fuzz(func(t *testing.T, file string) {
		tf, err := ParseTokenFile(strings.NewReader(file))
		cr := csv.NewReader(strings.NewReader(file))
		cr.FieldsPerRecord = -1
		want := map[string]request.User{}
		var oracleErr bool
		for {
			rec, rerr := cr.Read()
			if rerr == io.EOF {
				break
			}
			if rerr != nil || len(rec) < 3 {
				oracleErr = true
				break
			}
			if rec[0] == "" {
				continue
			}
			u := request.User{Name: rec[1], UID: rec[2]}
			if len(rec) > 3 {
				u.Groups = strings.Split(rec[3], ",")
			}
			want[rec[0]] = u
		}
		if (err != nil) != oracleErr {
			t.Fatalf("ParseTokenFile err = %v, oracle failed = %v", err, oracleErr)
		}
		if err != nil {
			return
		}
		if tf.Len() != len(want) {
			t.Fatalf("Len = %d, want %d", tf.Len(), len(want))
		}
		for tok, w := range want {
			got, ok := tf.lookup(tok)
			if !ok || !equalUser(got, &w) {
				t.Fatalf("lookup(%q) = %+v %v, want %+v", tok, got, ok, w)
			}
			if _, ok := tf.lookup(tok + "x"); ok && !slices.Contains(keys(want), tok+"x") {
				t.Fatalf("lookup(%q) matched an absent token", tok+"x")
			}
		}
	})
}

func keys[M ~map[string]V, V any](m M) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// FuzzParsePolicyFile: never panics; every accepted policy survives a
// round trip through its v1beta1 form unchanged, and a policy with no
// subject matches nobody.
func FuzzParsePolicyFile(f *testing.F) {
	f.Add(`{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"user":"alice","namespace":"*","resource":"*","apiGroup":"*"}}`)
	f.Add("# c\n\n{\"user\":\"bob\",\"readonly\":true}\n{}")
	f.Add(`{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"group":"*","nonResourcePath":"/api*"}}`)
	f.Add(`{"apiVersion":"abac.authorization.kubernetes.io/v0","kind":"Policy","group":"*"}`)
	f.Add(`{"apiVersion":1}`)
	f.Fuzz(func(t *testing.T, file string) {
		pl, err := ParsePolicyFile(strings.NewReader(file))
		if err != nil {
			return
		}
		var buf bytes.Buffer
		for _, p := range pl {
			line, err := json.Marshal(map[string]any{"apiVersion": ABACv1beta1, "kind": "Policy", "spec": p.Spec})
			if err != nil {
				t.Fatal(err)
			}
			buf.Write(line)
			buf.WriteByte('\n')
		}
		again, err := ParsePolicyFile(&buf)
		if err != nil {
			t.Fatalf("re-parse: %v\n%s", err, buf.String())
		}
		if len(again) != len(pl) {
			t.Fatalf("re-parse: %d policies, want %d", len(again), len(pl))
		}
		for i := range pl {
			if again[i].Spec != pl[i].Spec {
				t.Fatalf("policy %d: %+v after round trip, was %+v", i, again[i].Spec, pl[i].Spec)
			}
			s := pl[i].Spec
			if s.User == "" && s.Group == "" && pl[i].Matches(&request.User{Name: "x", Groups: []string{"y"}}, res("get", "", "pods", "")) {
				t.Fatalf("subject-less policy %+v matched", s)
			}
		}
	})
}
