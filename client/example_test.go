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
