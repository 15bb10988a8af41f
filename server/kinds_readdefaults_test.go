package server

import (
	"maps"
	"testing"
)

// kube-apiserver defaults every object it reads from etcd, a write's own
// response included, so defaults that read what the strategy set after
// the request was defaulted show on every read: these tests pin them on
// each way serve writes and reads a built-in object.

const (
	jobPath = "/apis/batch/v1/namespaces/default/jobs"
	pvcPath = "/api/v1/namespaces/default/persistentvolumeclaims"
)

func testJob(name string) map[string]any {
	return map[string]any{"apiVersion": "batch/v1", "kind": "Job", "metadata": map[string]any{"name": name},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"restartPolicy": "Never",
			"containers": []any{map[string]any{"name": "c", "image": "busybox", "command": []any{"true"}}}}}}}
}

func testPVC(name string) map[string]any {
	return map[string]any{"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": map[string]any{"name": name},
		"spec": map[string]any{"accessModes": []any{"ReadWriteOnce"},
			"resources": map[string]any{"requests": map[string]any{"storage": "1Gi"}}}}
}

// jobLabels checks that a Job has the labels SetDefaults_Job copies from
// the template labels the job strategy generates, as kube reads it back.
func jobLabels(t *testing.T, what string, job map[string]any) {
	t.Helper()
	name, _ := path(job, "metadata", "name").(string)
	uid, _ := path(job, "metadata", "uid").(string)
	want := map[string]any{
		"batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": name,
		"controller-uid": uid, "job-name": name,
	}
	got, _ := path(job, "metadata", "labels").(map[string]any)
	if uid == "" || !maps.Equal(got, want) {
		t.Errorf("%s: labels %v, want %v", what, got, want)
	}
}

func TestTypedReadDefaultsJob(t *testing.T) {
	e := newEnv(t)
	rv := path(e.must(200, "GET", jobPath, nil), "metadata", "resourceVersion").(string)
	w := e.watch(jobPath + "?watch=1&labelSelector=job-name%3Dj3&resourceVersion=" + rv)

	jobLabels(t, "create", e.must(201, "POST", jobPath, testJob("j3")))
	jobLabels(t, "get", e.must(200, "GET", jobPath+"/j3", nil))
	items, _ := e.must(200, "GET", jobPath+"?labelSelector=job-name%3Dj3", nil)["items"].([]any)
	if len(items) != 1 {
		t.Fatalf("list by job-name=j3: %d items", len(items))
	}
	jobLabels(t, "list", items[0].(map[string]any))
	jobLabels(t, "watch", w.expect("ADDED", "j3").Object)

	jobLabels(t, "dry-run create", e.must(201, "POST", jobPath+"?dryRun=All", testJob("j4")))
	e.must(404, "GET", jobPath+"/j4", nil)
	jobLabels(t, "apply create", e.must(201, "PATCH", jobPath+"/j5?fieldManager=m", testJob("j5"), "Content-Type", applyCT))

	// Writes that leave the labels out get them again; a label of the
	// client's own stays alone (the template's are copied only when the
	// Job has none).
	jobLabels(t, "patch labels away", e.must(200, "PATCH", jobPath+"/j3", `{"metadata":{"labels":null}}`, "Content-Type", jsonMerge))
	own := e.must(200, "PATCH", jobPath+"/j3", `{"metadata":{"labels":{"job-name":null,"controller-uid":null,"batch.kubernetes.io/job-name":null,"batch.kubernetes.io/controller-uid":null,"mine":"x"}}}`,
		"Content-Type", jsonMerge)
	if got := path(own, "metadata", "labels"); !maps.Equal(got.(map[string]any), map[string]any{"mine": "x"}) {
		t.Errorf("own labels: %v", got)
	}
	jobLabels(t, "status", e.must(200, "PATCH", jobPath+"/j5/status", `{"status":{"active":0}}`, "Content-Type", jsonMerge))
}

func TestTypedReadDefaultsPVC(t *testing.T) {
	e := newEnv(t)
	rv := path(e.must(200, "GET", pvcPath, nil), "metadata", "resourceVersion").(string)
	w := e.watch(pvcPath + "?watch=1&resourceVersion=" + rv)
	phase := func(what string, pvc map[string]any) {
		t.Helper()
		if got := path(pvc, "status", "phase"); got != "Pending" {
			t.Errorf("%s: status.phase %v, want Pending (status %v)", what, got, pvc["status"])
		}
	}
	phase("create", e.must(201, "POST", pvcPath, testPVC("c")))
	phase("get", e.must(200, "GET", pvcPath+"/c", nil))
	items, _ := e.must(200, "GET", pvcPath, nil)["items"].([]any)
	if len(items) != 1 {
		t.Fatalf("list: %d items", len(items))
	}
	phase("list", items[0].(map[string]any))
	phase("watch", w.expect("ADDED", "c").Object)
	phase("dry-run create", e.must(201, "POST", pvcPath+"?dryRun=All", testPVC("d")))
	phase("apply create", e.must(201, "PATCH", pvcPath+"/a?fieldManager=m", testPVC("a"), "Content-Type", applyCT))
	phase("update", e.must(200, "PATCH", pvcPath+"/c", `{"metadata":{"labels":{"a":"b"}}}`, "Content-Type", jsonMerge))
	phase("status", e.must(200, "PATCH", pvcPath+"/c/status", `{"status":{"phase":null}}`, "Content-Type", jsonMerge))
}
