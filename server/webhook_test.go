package server

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/util/proxy"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
)

// TestWebhookServiceResolution: a webhook's service reference resolves to
// a ready endpoint of its EndpointSlices, at the slice's port of the
// service port's name (kube's aggregator routing), not to a cluster IP
// nothing routes here.
func TestWebhookServiceResolution(t *testing.T) {
	services := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	slices := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	_ = services.Add(&corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "hook"},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Ports: []corev1.ServicePort{{Name: "https", Port: 443}}},
	})
	_ = slices.Add(&discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "ns", Name: "hook-1", Labels: map[string]string{discoveryv1.LabelServiceName: "hook"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"10.1.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: new(false)}},
			{Addresses: []string{"10.1.0.2"}, Conditions: discoveryv1.EndpointConditions{Ready: new(true)}},
		},
		Ports: []discoveryv1.EndpointPort{{Name: new("https"), Port: new(int32(8443))}},
	})
	getter, err := proxy.NewEndpointSliceListerGetter(discoverylisters.NewEndpointSliceLister(slices))
	if err != nil {
		t.Fatal(err)
	}
	r := endpointResolver{services: corelisters.NewServiceLister(services), slices: getter}
	u, err := r.ResolveEndpoint("ns", "hook", 443)
	if err != nil {
		t.Fatal(err)
	}
	if u.String() != "https://10.1.0.2:8443" {
		t.Errorf("resolved to %s, want the ready endpoint https://10.1.0.2:8443", u)
	}
	if _, err := r.ResolveEndpoint("ns", "hook", 80); err == nil {
		t.Error("a port the service does not have resolved")
	}
	if _, err := r.ResolveEndpoint("ns", "missing", 443); err == nil {
		t.Error("a missing service resolved")
	}
}

// TestWebhooksIdle: writes skip the admission plugins only once the
// informers have synced and while no store holds a configuration.
func TestWebhooksIdle(t *testing.T) {
	stores := make([]cache.Store, 6)
	for i := range stores {
		stores[i] = cache.NewStore(cache.MetaNamespaceKeyFunc)
	}
	w := &Webhooks{synced: make(chan struct{}), configs: stores}
	if w.idle() {
		t.Fatal("idle before the informers synced")
	}
	close(w.synced)
	if !w.idle() {
		t.Fatal("not idle with every store empty")
	}
	for i, s := range stores {
		obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "c"}}
		if err := s.Add(obj); err != nil {
			t.Fatal(err)
		}
		if w.idle() {
			t.Errorf("idle while store %d holds a configuration", i)
		}
		if err := s.Delete(obj); err != nil {
			t.Fatal(err)
		}
	}
	if !w.idle() {
		t.Fatal("not idle once the configurations are gone")
	}
}
