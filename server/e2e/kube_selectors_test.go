package e2e

import (
	"net/http"
	"net/url"
	"slices"
	"testing"
)

// TestKubeSelectorsSameAsOurs sends the same label and field selectors,
// and other list options, to kube-apiserver and to serve, over objects made alike on both: the same
// code and message for those refused, the same objects for the others
// (among those the test made: serve's controllers make others).
func TestKubeSelectorsSameAsOurs(t *testing.T) {
	t.Parallel()
	kube, ours, ns := sideBySide(t)
	node := ns + "-node"
	nodes := "/api/v1/nodes"
	made := map[string]bool{node: true}
	for _, c := range []*rawClient{kube, ours} {
		for _, o := range []struct{ path, body string }{
			{nodes, `{"apiVersion":"v1","kind":"Node","metadata":{"name":"` + node + `","labels":{"tier":"a","n":"3"}}}`},
			{"/api/v1/namespaces/" + ns + "/pods", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"tier":"b"}},"spec":{"containers":[{"name":"c","image":"x"}]}}`},
			{"/api/v1/namespaces/" + ns + "/services", `{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"},"spec":{"ports":[{"port":80}]}}`},
			{"/apis/batch/v1/namespaces/" + ns + "/jobs", `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j"},"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"x"}]}}}}`},
			{"/api/v1/namespaces/" + ns + "/configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","labels":{"tier":"a","n":"10"}}}`},
		} {
			if code, m := c.do("POST", o.path, jsonCT, o.body); code != http.StatusCreated {
				t.Fatalf("create %s: %d %v", o.path, code, m)
			}
		}
		t.Cleanup(func() { c.do("DELETE", nodes+"/"+node, "", "") })
	}
	for _, n := range []string{"p", "s", "j", "cm"} {
		made[n] = true
	}
	pods := "/api/v1/namespaces/" + ns + "/pods"
	cms := "/api/v1/namespaces/" + ns + "/configmaps"
	for _, q := range []struct{ path, label, field, more string }{
		{cms, "", "", "limit=-1"},
		{cms, "", "", "limit=abc"},
		{cms, "", "", "timeoutSeconds=abc"},
		{cms, "", "", "allowWatchBookmarks=x"},
		{cms, "", "", "sendInitialEvents=maybe"},
		{cms, "", "", "continue=abc"},
		{cms, "", "", "continue=abc&resourceVersion=5"},
		{cms, "", "", "resourceVersion=abc&limit=5"},
		{cms, "", "", "resourceVersion=-1"},
		{cms, "tier=a", "", ""},
		{cms, "tier in (a,b),n>3", "", ""},
		{cms, "tier notin (b), !x", "", ""},
		{cms, "n<3", "", ""},
		{cms, "a===b", "", ""},
		{cms, "a=b@c", "", ""},
		{cms, "a in (x,y", "", ""},
		{cms, "!", "", ""},
		{cms, "x/y/z=1", "", ""},
		{cms, "a=1,", "", ""},
		{cms, ",", "", ""},
		{cms, "a>x", "", ""},
		{cms, "a exists", "", ""},
		{cms, "", "metadata.name=cm,", ""},
		{cms, "", "metadata.name", ""},
		{cms, "", "metadata.name==a=b", ""},
		{cms, "", `metadata.name=a\`, ""},
		{cms, "", `metadata.name=\x`, ""},
		{cms, "", "metadata.name = cm", ""},
		{cms, "", "metadata.name>1", ""},
		{cms, "", "data.k=v", ""},
		{pods, "", "spec.hostNetwork=false", ""},
		{pods, "", "spec.host=", ""},
		{pods, "", "status.podIPs=", ""},
		{pods, "", "status.podIPs!=", ""},
		{pods, "", "spec.restartPolicy=Always,status.phase=Pending", ""},
		{pods, "", "spec.unschedulable=false", ""},
		{nodes, "tier=a", "spec.unschedulable=false", ""},
		{nodes, "", "spec.unschedulable=true", ""},
		{nodes, "", "metadata.namespace=", ""},
		{"/apis/batch/v1/namespaces/" + ns + "/jobs", "", "status.successful=0", ""},
		{"/apis/batch/v1/namespaces/" + ns + "/jobs", "", "status.active=0", ""},
		{"/api/v1/namespaces/" + ns + "/services", "", "spec.type=ClusterIP", ""},
		{"/api/v1/namespaces/" + ns + "/services", "", "spec.clusterIP=", ""},
		{"/apis/apps/v1/namespaces/" + ns + "/replicasets", "", "status.replicas=0", ""},
	} {
		v := url.Values{}
		if q.label != "" {
			v.Set("labelSelector", q.label)
		}
		if q.field != "" {
			v.Set("fieldSelector", q.field)
		}
		path := q.path + "?" + v.Encode()
		if q.more != "" {
			path += "&" + q.more
		}
		kc, km := kube.do("GET", path, "", "")
		oc, om := ours.do("GET", path, "", "")
		if kc != oc || km["message"] != om["message"] || !slices.Equal(madeNames(km, made), madeNames(om, made)) {
			t.Errorf("%s: kube %d %v %v, serve %d %v %v", path, kc, km["message"], madeNames(km, made), oc, om["message"], madeNames(om, made))
		}
	}
}

// madeNames are the sorted names of a list's items that are in made.
func madeNames(list map[string]any, made map[string]bool) []string {
	var names []string
	items, _ := list["items"].([]any)
	for _, it := range items {
		m, _ := it.(map[string]any)
		meta, _ := m["metadata"].(map[string]any)
		if name, _ := meta["name"].(string); made[name] {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}
