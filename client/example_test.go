package client_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/wire"
)

// A server answering one page of configmaps, as kube-apiserver would.
func exampleServer() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"42"},"items":[`+
			`{"metadata":{"name":"a","namespace":"default","resourceVersion":"40"}},`+
			`{"metadata":{"name":"b","namespace":"default","resourceVersion":"41"}}]}`)
	}))
}

func ExampleResource_ListAll() {
	srv := exampleServer()
	defer srv.Close()

	cfg, err := client.ConfigFromURL(srv.URL, "")
	if err != nil {
		panic(err)
	}
	c, err := client.New(cfg)
	if err != nil {
		panic(err)
	}
	defer c.CloseIdleConnections()
	cms := client.NewResource[*object.Unstructured](c, client.GroupVersionResource{Version: "v1", Resource: "configmaps"})

	list, err := cms.Namespace("default").ListAll(context.Background(), wire.ListOptions{})
	if err != nil {
		panic(err)
	}
	for _, cm := range list.Items {
		fmt.Println(object.Key(cm), cm.GetResourceVersion())
	}
	fmt.Println("watch from", list.Metadata.ResourceVersion)
	// Output:
	// default/a 40
	// default/b 41
	// watch from 42
}

// A server answering a server-side apply or a status update with the
// object, saying what it was asked.
func exampleWriteServer() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Println(r.Method, r.URL.Path+"?"+r.URL.RawQuery, r.Header.Get("Content-Type"))
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"settings","namespace":"default","resourceVersion":"43"},"data":{"mode":"fast"}}`)
	}))
}

func ExampleResource_Apply() {
	srv := exampleWriteServer()
	defer srv.Close()
	cfg, _ := client.ConfigFromURL(srv.URL, "")
	c, _ := client.New(cfg)
	defer c.CloseIdleConnections()
	cms := client.NewResource[*object.Unstructured](c, client.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("default")

	// Only the fields this manager owns: not a whole typed object.
	cm, err := cms.Apply(context.Background(), "settings", []byte(`
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  mode: fast
`), client.FieldOwner("example-controller"), client.ForceOwnership)
	if err != nil {
		panic(err)
	}
	fmt.Println(cm.GetResourceVersion())
	// Output:
	// PATCH /api/v1/namespaces/default/configmaps/settings?fieldManager=example-controller&force=true application/apply-patch+yaml
	// 43
}

func ExampleResource_Subresource() {
	srv := exampleWriteServer()
	defer srv.Close()
	cfg, _ := client.ConfigFromURL(srv.URL, "")
	c, _ := client.New(cfg)
	defer c.CloseIdleConnections()
	widgets := client.NewResource[*object.Unstructured](c, client.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}).Namespace("default")
	status := widgets.Subresource("status") // keep it: it negotiates on its own

	w := &object.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "resourceVersion": "42"}, "status": map[string]any{"ready": true}}}
	if _, err := status.Update(context.Background(), w, client.DryRunAll); err != nil {
		panic(err)
	}
	// Output:
	// PUT /apis/example.com/v1/namespaces/default/widgets/w/status?dryRun=All application/json
}
