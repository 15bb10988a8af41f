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
	t.Parallel()
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

	// same sends url uncompressed, then gzipped, and wants the same
	// bytes. The two GETs may straddle a write elsewhere (the server's
	// identity Lease is renewed every 10 s), which moves the list's
	// resourceVersion: then they are sent again; a splicing error shows
	// on every try.
	same := func(url, accept string) []byte {
		t.Helper()
		for try := 0; ; try++ {
			_, plain := rawGet(t, s, url, map[string]string{"Accept": accept})
			resp, gz := rawGet(t, s, url, map[string]string{"Accept": accept, "Accept-Encoding": "gzip"})
			if ce := resp.Header.Get("Content-Encoding"); ce != "gzip" {
				t.Fatalf("%s (%s): Content-Encoding %q on %d bytes", url, accept, ce, len(plain))
			}
			got := gunzip(t, gz)
			if bytes.Equal(got, plain) {
				return plain
			}
			if try == 2 {
				t.Fatalf("%s (%s): gunzipped %d bytes differ from the %d uncompressed%s", url, accept, len(got), len(plain), firstDifference(got, plain))
			}
		}
	}
	// gzipRuns sends url gzipped once and returns how many of its runs
	// were compressed and how many reused.
	gzipRuns := func(url, accept string) (compressed, reused float64) {
		t.Helper()
		r0, c0 := runs()
		resp, _ := rawGet(t, s, url, map[string]string{"Accept": accept, "Accept-Encoding": "gzip"})
		if ce := resp.Header.Get("Content-Encoding"); ce != "gzip" {
			t.Fatalf("%s (%s): Content-Encoding %q", url, accept, ce)
		}
		r1, c1 := runs()
		return c1 - c0, r1 - r0
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
	checkAll()
	if _, compressed := runs(); compressed == 0 {
		t.Fatal("no run was compressed: the lists were not spliced")
	}
	// Every form's runs are compressed now: a repeated list compresses
	// none again and reuses as many as the one before it.
	for _, accept := range accepts {
		c1, r1 := gzipRuns(list, accept)
		c2, r2 := gzipRuns(list, accept)
		if c1 != 0 || c2 != 0 || r1 == 0 || r2 != r1 {
			t.Fatalf("%s, listed twice more: %g and %g runs compressed, %g and %g reused; want none, and the same number reused", accept, c1, c2, r1, r2)
		}
	}

	// One update: the next unpaged list compresses only the runs on the
	// written object's path, and reuses the rest.
	up := cm(1234)
	up.Data["text"] = "changed"
	if _, err := cs.CoreV1().ConfigMaps(ns).Update(ctx, up, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if c, r := gzipRuns(list, accepts[0]); c < 1 || c > 3 || r < 2 {
		t.Fatalf("after one update: %g runs compressed, %g reused; want 1-3 and the rest", c, r)
	}
	same(list, accepts[0])

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

// firstDifference describes where got and want first differ.
func firstDifference(got, want []byte) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	around := func(b []byte) []byte { return b[max(0, i-40):min(len(b), i+40)] }
	return fmt.Sprintf(" from byte %d:\n got  %q\n want %q", i, around(got), around(want))
}
