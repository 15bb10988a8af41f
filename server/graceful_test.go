package server

import "testing"

// TestPodGracePeriodRule checks podGracePeriod case by case against
// kube's podStrategy.CheckGracefulDelete.
func TestPodGracePeriodRule(t *testing.T) {
	i := func(n int64) *int64 { return &n }
	cases := []struct {
		name      string
		spec      string
		status    string
		requested *int64
		want      int64
	}{
		{"unbound", `{}`, `{}`, nil, 0},
		{"unbound-requested", `{}`, `{}`, i(20), 0},
		{"bound-default", `{"nodeName":"n"}`, `{}`, nil, 30},
		{"bound-own", `{"nodeName":"n","terminationGracePeriodSeconds":12}`, `{}`, nil, 12},
		{"bound-own-zero", `{"nodeName":"n","terminationGracePeriodSeconds":0}`, `{}`, nil, 0},
		{"bound-requested-over-own", `{"nodeName":"n","terminationGracePeriodSeconds":12}`, `{}`, i(3), 3},
		{"bound-requested-zero", `{"nodeName":"n"}`, `{}`, i(0), 0},
		{"bound-negative", `{"nodeName":"n"}`, `{}`, i(-5), 1},
		{"bound-own-negative", `{"nodeName":"n","terminationGracePeriodSeconds":-2}`, `{}`, nil, 1},
		{"succeeded", `{"nodeName":"n"}`, `{"phase":"Succeeded"}`, i(9), 0},
		{"failed", `{"nodeName":"n"}`, `{"phase":"Failed"}`, nil, 0},
		{"running", `{"nodeName":"n"}`, `{"phase":"Running"}`, nil, 30},
		{"pending", `{"nodeName":"n"}`, `{"phase":"Pending"}`, i(4), 4},
	}
	for _, c := range cases {
		d, err := decodeDoc([]byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":` + c.spec + `,"status":` + c.status + `}`))
		if err != nil {
			t.Fatal(err)
		}
		if got := podGracePeriod(d, c.requested); got != c.want {
			t.Errorf("%s: got %d, want %d", c.name, got, c.want)
		}
	}
}
