package e2e

import (
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/informer"
)

// flipKey spells key with random letters' case flipped; never key itself.
func flipKey(r *rand.Rand, key string) string {
	for {
		b := []byte(key)
		for i, c := range b {
			if r.IntN(2) == 0 {
				if c >= 'a' && c <= 'z' {
					b[i] = c - 'a' + 'A'
				} else if c >= 'A' && c <= 'Z' {
					b[i] = c - 'A' + 'a'
				}
			}
		}
		if string(b) != key {
			return string(b)
		}
	}
}

// TestInformerSeesServerAssignedMetadata: writers send metadata with case
// variants and duplicates of name, namespace, resourceVersion and uid;
// whatever the spelling, our typed informer and lister see each object
// under the name the server created it with and at the resourceVersion
// the server assigned, through the list, the watch, creates and patches.
func TestInformerSeesServerAssignedMetadata(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	c := ourClient(t, s)
	cfg := restConfig(t, s)
	cfg.WarningHandler = rest.NoWarnings{}
	cs := kubernetes.NewForConfigOrDie(cfg)
	ctx := t.Context()
	cms := client.NewResource[*corev1.ConfigMap](c, client.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("default")
	raw := cs.CoreV1().RESTClient()

	n := 12
	if os.Getenv("LISTWATCH_LONG") != "" {
		n = 200
	}
	create := func(seed int) (name, rv string) {
		r := rand.New(rand.NewPCG(uint64(seed), 11))
		name = fmt.Sprintf("cm-%d", seed)
		var members []string
		for _, k := range []string{"name", "namespace", "resourceVersion", "uid"} {
			for range r.IntN(3) {
				members = append(members, fmt.Sprintf(`%q:"evil"`, flipKey(r, k)))
			}
		}
		if r.IntN(2) == 0 {
			members = append(members, `"name":"dup"`) // an earlier duplicate loses
		}
		r.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
		// The real name goes anywhere after "dup": the last exact key wins.
		at := 0
		for i, m := range members {
			if m == `"name":"dup"` {
				at = i + 1
			}
		}
		at += r.IntN(len(members) - at + 1)
		members = slices.Insert(members, at, fmt.Sprintf(`"name":%q`, name))
		body := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{` + strings.Join(members, ",") + `},"data":{"k":"v"}}`
		out, err := raw.Post().Namespace("default").Resource("configmaps").SetHeader("Content-Type", "application/json").
			Body([]byte(body)).Do(ctx).Raw()
		if err != nil {
			t.Fatalf("create %s: %v", body, err)
		}
		var cm corev1.ConfigMap
		if err := json.Unmarshal(out, &cm); err != nil || cm.Name != name || strings.Contains(string(out), "evil") {
			t.Fatalf("created %s from %s: %v", out, body, err)
		}
		return name, cm.ResourceVersion
	}

	// Half the objects exist before the informer starts (its list), half
	// are created after (its watch).
	want := map[string]string{}
	for i := range n / 2 {
		name, rv := create(i)
		want["default/"+name] = rv
	}
	inf, err := informer.New(informer.NewListWatchFromClient[*corev1.ConfigMap](cms, "", ""), informer.Options[*corev1.ConfigMap]{})
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder[*corev1.ConfigMap](t)
	if _, err := inf.AddEventHandler(rec, informer.HandlerOptions{}); err != nil {
		t.Fatal(err)
	}
	runInformer(t, inf)
	check := func(key, rv string) {
		t.Helper()
		got, ok := inf.Lister().GetByKey(key)
		if !ok || got.ResourceVersion != rv {
			t.Fatalf("lister has %s at %+v, want resourceVersion %s", key, got, rv)
		}
	}
	for range len(want) {
		nextEvent(t, rec.events)
	}
	for key, rv := range want {
		check(key, rv)
	}
	for i := n / 2; i < n; i++ {
		name, rv := create(i)
		rec.expect("add default/" + name)
		check("default/"+name, rv)
		// A patch whose metadata carries variants changes the labels only.
		p := fmt.Sprintf(`{"metadata":{"resourceversion":"1","Name":"evil","NameSpace":"evil","labels":{"seed":"%d"}}}`, i)
		out, err := raw.Patch(types.MergePatchType).Namespace("default").Resource("configmaps").Name(name).Body([]byte(p)).Do(ctx).Raw()
		if err != nil {
			t.Fatal(err)
		}
		var cm corev1.ConfigMap
		_ = json.Unmarshal(out, &cm)
		rec.expect("update default/" + name)
		check("default/"+name, cm.ResourceVersion)
	}
	if got := len(inf.Lister().List()); got != n {
		t.Fatalf("lister has %d objects, want %d", got, n)
	}
}

// TestInformerIgnoresCaseVariantsFromServer: a server (hostile, or with
// data stored before the server dropped such keys) sends objects whose
// metadata has case variants of resourceVersion and name after the real
// ones, and mistyped ones. encoding/json would let the former win and fail
// the whole object on the latter; our typed informer, like client-go,
// reads only the exact keys, in the list and in watch events.
func TestInformerIgnoresCaseVariantsFromServer(t *testing.T) {
	t.Parallel()
	obj := func(name, rv string) string {
		return fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":"default","resourceVersion":%q,`+
			`"resourceversion":"1","Name":"evil","NAMESPACE":"evil","uid":"u-%s","Uid":"evil","NAME":[]},"Metadata":{"name":"evil2"},"KIND":7,"data":{"k":"v"}}`, name, rv, name)
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("watch") != "" {
			fmt.Fprintf(w, `{"type":"ADDED","object":%s}`+"\n", obj("b", "11"))
			fmt.Fprintf(w, `{"type":"MODIFIED","object":%s}`+"\n", obj("a", "12"))
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return
		}
		fmt.Fprintf(w, `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"10"},"items":[%s]}`, obj("a", "10"))
	})
	srv := httptest.NewUnstartedServer(h)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	c, err := client.New(&client.Config{Host: srv.URL, QPS: -1,
		CAData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	cms := client.NewResource[*corev1.ConfigMap](c, client.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("default")
	inf, err := informer.New(informer.NewListWatchFromClient[*corev1.ConfigMap](cms, "", ""), informer.Options[*corev1.ConfigMap]{})
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder[*corev1.ConfigMap](t)
	if _, err := inf.AddEventHandler(rec, informer.HandlerOptions{}); err != nil {
		t.Fatal(err)
	}
	runInformer(t, inf)
	// The events of different keys may come in any order.
	var got []string
	for range 3 {
		got = append(got, nextEvent(t, rec.events))
	}
	slices.Sort(got)
	if want := []string{"add default/a", "add default/b", "update default/a"}; !slices.Equal(got, want) {
		t.Fatalf("events %q, want %q", got, want)
	}
	for name, rv := range map[string]string{"a": "12", "b": "11"} {
		got, ok := inf.Lister().GetByKey("default/" + name)
		if !ok || got.ResourceVersion != rv || got.Name != name || string(got.UID) != "u-"+name {
			t.Fatalf("lister has %+v, want %s at %s", got, name, rv)
		}
	}
	if got := len(inf.Lister().List()); got != 2 {
		t.Fatalf("lister has %d objects", got)
	}
}

func nextEvent(t *testing.T, events <-chan string) string {
	t.Helper()
	select {
	case e := <-events:
		return e
	case <-time.After(30 * time.Second):
		t.Fatal("no event")
		return ""
	}
}
