package e2e

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// TestListGzipRuns: a gzipped LIST of many objects is spliced from runs of
// objects compressed by an earlier list and parts compressed live. Every
// form (JSON, protobuf, and both as PartialObjectMetadata; unpaged and
// paged) gunzips to exactly the uncompressed response, before and after
// writes; a repeated list compresses no run again, and after one write
// only the runs around the written object are.
func TestListGzipRuns(t *testing.T) {
	s := startServer(t, "")
	cs := kubernetes.NewForConfigOrDie(restConfig(t, s))
	ctx := context.Background()
	const ns, n = "runs", 2000
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cm := func(i int) *corev1.ConfigMap {
		return &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%05d", i), Labels: map[string]string{"app": "runs"}},
			Data:       map[string]string{"index": strconv.Itoa(i), "text": strings.Repeat(strconv.Itoa(i*7919), 20)},
		}
	}
	inParallel(t, 8, n, func(i int) error {
		_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm(i), metav1.CreateOptions{})
		return err
	})

	list := s.URL() + "/api/v1/namespaces/" + ns + "/configmaps"
	accepts := []string{
		"application/json",
		"application/vnd.kubernetes.protobuf",
		"application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
		"application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
	}
	continueRE := regexp.MustCompile(`"continue":"([^"]+)"`)
	same := func(url, accept string) []byte {
		t.Helper()
		_, plain := rawGet(t, s, url, map[string]string{"Accept": accept})
		resp, gz := rawGet(t, s, url, map[string]string{"Accept": accept, "Accept-Encoding": "gzip"})
		if ce := resp.Header.Get("Content-Encoding"); ce != "gzip" {
			t.Fatalf("%s (%s): Content-Encoding %q on %d bytes", url, accept, ce, len(plain))
		}
		if got := gunzip(t, gz); !bytes.Equal(got, plain) {
			t.Fatalf("%s (%s): gunzipped %d bytes differ from the %d uncompressed", url, accept, len(got), len(plain))
		}
		return plain
	}
	checkAll := func() {
		t.Helper()
		for _, accept := range accepts {
			same(list, accept)
		}
		// Pages: the second page starts inside the first page's runs.
		first := same(list+"?limit=700", "application/json")
		m := continueRE.FindSubmatch(first)
		if m == nil {
			t.Fatal("first page has no continue token")
		}
		same(list+"?limit=700&continue="+string(m[1]), "application/json")
		same(list+"?limit=700", accepts[1])
	}
	runs := func() (reused, compressed float64) {
		t.Helper()
		_, body := rawGet(t, s, s.URL()+"/metrics", nil)
		for _, l := range strings.Split(string(body), "\n") {
			var v float64
			if _, err := fmt.Sscanf(l, `listwatch_apiserver_list_gzip_runs_total{result="reused"} %g`, &v); err == nil {
				reused = v
			}
			if _, err := fmt.Sscanf(l, `listwatch_apiserver_list_gzip_runs_total{result="compressed"} %g`, &v); err == nil {
				compressed = v
			}
		}
		return reused, compressed
	}

	checkAll()
	reused1, compressed1 := runs()
	if compressed1 == 0 {
		t.Fatal("no run was compressed: the lists were not spliced")
	}
	checkAll()
	reused2, compressed2 := runs()
	if compressed2 != compressed1 || reused2-reused1 != compressed1+reused1 {
		t.Fatalf("repeated lists: %g runs compressed again, %g reused; want 0 and %g", compressed2-compressed1, reused2-reused1, compressed1+reused1)
	}

	// One update: the next unpaged list compresses only the runs on the
	// written object's path, and reuses the rest.
	up := cm(1234)
	up.Data["text"] = "changed"
	if _, err := cs.CoreV1().ConfigMaps(ns).Update(ctx, up, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	same(list, accepts[0])
	reused3, compressed3 := runs()
	if c, r := compressed3-compressed2, reused3-reused2; c < 1 || c > 3 || r < 2 {
		t.Fatalf("after one update: %g runs compressed, %g reused; want 1-3 and the rest", c, r)
	}

	// More writes of every kind, then every form again.
	if err := cs.CoreV1().ConfigMaps(ns).Delete(ctx, "cm-00007", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm(n+1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	up = cm(1500)
	up.Labels["app"] = "other"
	if _, err := cs.CoreV1().ConfigMaps(ns).Update(ctx, up, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	checkAll()
}

// inParallel runs do(0..n-1) on workers goroutines, each taking every
// workers'th index, and fails t with the first errors once all are done.
func inParallel(t *testing.T, workers, n int, do func(i int) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				if err := do(i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
