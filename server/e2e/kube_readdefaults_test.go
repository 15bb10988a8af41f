package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestKubeReadDefaultsSameAsOurs: kube-apiserver defaults each object it
// reads back from etcd, so a Job shows the labels SetDefaults_Job copies
// from the template labels its strategy generated (kubectl get jobs -l
// job-name=j finds it) and a PersistentVolumeClaim the phase Pending its
// defaults give the status its strategy reset. The same writes go to kube
// and to serve, and the answers, GETs, lists by label and watch events
// must be the same (server-chosen values masked).
func TestKubeReadDefaultsSameAsOurs(t *testing.T) {
	t.Parallel()
	kube, ours, ns := sideBySide(t)
	jobs := "/apis/batch/v1/namespaces/" + ns + "/jobs"
	pvcs := "/api/v1/namespaces/" + ns + "/persistentvolumeclaims"
	job := func(name string) string {
		return `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"` + name + `"},"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox","command":["true"]}]}}}}`
	}
	pvc := func(name string) string {
		return `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"` + name + `"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}`
	}
	const applyCT = "application/apply-patch+yaml"
	rvs := [2]string{kube.listRV(jobs), ours.listRV(jobs)}
	sendSteps(t, kube, ours, writeView, []writeStep{
		{"create job", "POST", jobs, jsonCT, job("j3")},
		{"get job", "GET", jobs + "/j3", "", ""},
		{"list jobs by job-name", "GET", jobs + "?labelSelector=job-name%3Dj3", "", ""},
		{"list jobs by batch job-name", "GET", jobs + "?labelSelector=batch.kubernetes.io%2Fjob-name", "", ""},
		{"create job dry run", "POST", jobs + "?dryRun=All", jsonCT, job("j4")},
		{"apply job", "PATCH", jobs + "/j5?fieldManager=m", applyCT, job("j5")},
		{"patch job labels away", "PATCH", jobs + "/j5", mergePatch, `{"metadata":{"labels":null}}`},
		{"patch job status", "PATCH", jobs + "/j3/status", mergePatch, `{"status":{"active":1}}`},
		{"list jobs by job-name again", "GET", jobs + "?labelSelector=job-name", "", ""},
		{"create claim", "POST", pvcs, jsonCT, pvc("c")},
		{"get claim", "GET", pvcs + "/c", "", ""},
		{"create claim dry run", "POST", pvcs + "?dryRun=All", jsonCT, pvc("d")},
		{"apply claim", "PATCH", pvcs + "/a?fieldManager=m", applyCT, pvc("a")},
		{"patch claim status", "PATCH", pvcs + "/c/status", mergePatch, `{"status":{"phase":null}}`},
		{"list claims", "GET", pvcs, "", ""},
	})
	// The watch replays the creates and writes above: the same events,
	// with the same objects, for the Jobs labelled job-name=j3.
	q := "?watch=1&timeoutSeconds=1&labelSelector=job-name%3Dj3&resourceVersion="
	compareWatches(t, kube, ours, jobs+q, rvs)
}

// watchEvents reads the watch at path (which ends it, by timeoutSeconds)
// and returns each event's type and view of its object. It lists the
// watched collection first (caughtUp), so that a watch replaying writes
// made just before it has them all within its timeout.
func (c *rawClient) watchEvents(path string, view func(map[string]any) string) []string {
	c.t.Helper()
	c.caughtUp(path)
	code, _, b := c.send("GET", path, "", jsonCT, "")
	if code != 200 {
		c.t.Fatalf("watch %s: %d %s", path, code, b)
	}
	var events []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev struct {
			Type   string         `json:"type"`
			Object map[string]any `json:"object"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			c.t.Fatalf("watch event %q: %v", sc.Bytes(), err)
		}
		events = append(events, ev.Type+" "+view(ev.Object))
	}
	return events
}

// caughtUp lists the collection a watch path watches (its query and a
// /watch/ segment dropped). A consistent list waits, on kube-apiserver
// and on serve, until the watch cache has the newest revision (for up to
// 3 s); a watch from a resourceVersion before the last writes is then
// sent them at once from the cache, where otherwise the cache's lag
// behind etcd on a loaded machine could outlast the watch's
// timeoutSeconds and leave the last events out on one server.
func (c *rawClient) caughtUp(watchPath string) {
	c.t.Helper()
	p, _, _ := strings.Cut(watchPath, "?")
	p = strings.Replace(p, "/watch/", "/", 1)
	if code, m := c.do("GET", p, "", ""); code != http.StatusOK {
		c.t.Fatalf("list %s before its watch: %d %v", p, code, m)
	}
}

// listRV is the resourceVersion of a list of path, to watch from.
func (c *rawClient) listRV(path string) string {
	c.t.Helper()
	_, m := c.do("GET", path, "", "")
	rv, _ := m["metadata"].(map[string]any)["resourceVersion"].(string)
	return rv
}
