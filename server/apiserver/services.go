package apiserver

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	apistorage "k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/pkg/controlplane/controller/defaultservicecidr"
	"k8s.io/kubernetes/pkg/controlplane/controller/kubernetesservice"
	"k8s.io/kubernetes/pkg/controlplane/reconcilers"
	"k8s.io/kubernetes/pkg/registry/core/service/allocator"
	"k8s.io/kubernetes/pkg/registry/core/service/ipallocator"
	ipcontroller "k8s.io/kubernetes/pkg/registry/core/service/ipallocator/controller"
	"k8s.io/kubernetes/pkg/registry/core/service/portallocator"
	portcontroller "k8s.io/kubernetes/pkg/registry/core/service/portallocator/controller"
	servicestore "k8s.io/kubernetes/pkg/registry/core/service/storage"
	netutils "k8s.io/utils/net"

	"github.com/listwatch/listwatch/server/storage"
)

// Defaults of kube-apiserver's --service-cluster-ip-range (when unset)
// and --service-node-port-range.
const (
	DefaultServiceClusterIPRange = "10.0.0.0/24"
	DefaultServiceNodePortRange  = "30000-32767"
)

// serviceAllocation is what kube-apiserver's Service REST storage does
// around the Service strategy, with kube's own code: cluster IPs from
// the ServiceCIDRs, each allocation an IPAddress object
// (ipallocator.MetaAllocator, over a loopback client as in kube), the
// default ServiceCIDR "kubernetes" made from --service-cluster-ip-range
// (kube's defaultservicecidr controller), kube's IPAddress repair loop,
// and node ports from --service-node-port-range. The allocation rules
// (IP families, requested IPs and ports, type changes, dry runs) are
// kube's Service REST hooks, taken from servicestore.NewREST.
//
// The "kubernetes" Service of the default namespace, at the range's
// first address and port 443, is kept by kube's kubernetesservice
// controller, as kube-apiserver keeps it; with no endpoints (kube's
// "none" endpoint reconciler: an endpoint on a loopback address, where
// serve listens by default, is invalid).
//
// Node ports are a bitmap in the store (rangealloc.go), changed by
// compare-and-swap as kube's is, so servers sharing an etcd cluster
// never give one port twice, and kept by kube's node-port repair loop:
// its first run (before the server is ready) records the ports of the
// stored Services; later ones free ports no Service has held for three
// runs (a server that died between allocating and storing).
type serviceAllocation struct {
	client  kubernetes.Interface
	factory informers.SharedInformerFactory
	cidr    *net.IPNet
	ips     *ipallocator.MetaAllocator
	ports   *portallocator.PortAllocator
	// nodePorts is the node-port allocator's stored bitmap.
	nodePorts *storedRange
	// portRepair is kube's node-port repair loop over nodePorts.
	portRepair *portcontroller.Repair
	rest       *servicestore.REST
	repair     *ipcontroller.RepairIPAddress
	// kubernetes keeps the default namespace's "kubernetes" Service.
	kubernetes *kubernetesservice.Controller
	// ready is closed once allocations can be made.
	ready chan struct{}
}

// newServiceAllocation builds the allocators; run starts them.
// port is where the server listens, the Service's target port.
func newServiceAllocation(o Options, client kubernetes.Interface, store storage.Interface, port int) (*serviceAllocation, error) {
	_, cidr, err := netutils.ParseCIDRSloppy(o.ServiceClusterIPRange)
	if err != nil {
		return nil, fmt.Errorf("%w: --service-cluster-ip-range %q: %v", ErrOptions, o.ServiceClusterIPRange, err)
	}
	pr, err := utilnet.ParsePortRange(o.ServiceNodePortRange)
	if err != nil {
		return nil, fmt.Errorf("%w: --service-node-port-range %q: %v", ErrOptions, o.ServiceNodePortRange, err)
	}
	a := &serviceAllocation{client: client, cidr: cidr, ready: make(chan struct{})}
	a.ports, err = portallocator.New(*pr, func(max int, rangeSpec string, offset int) (allocator.Interface, error) {
		a.nodePorts = newStoredRange(store, nodePortsKey, max, rangeSpec, offset)
		return a.nodePorts, nil
	})
	if err != nil {
		return nil, fmt.Errorf("%w: --service-node-port-range %q: %v", ErrOptions, o.ServiceNodePortRange, err)
	}
	a.factory = informers.NewSharedInformerFactory(client, 0)
	net1 := a.factory.Networking().V1()
	// Informers are registered before the factory starts (run).
	services := a.factory.Core().V1().Services()
	if a.ips, err = ipallocator.NewMetaAllocator(client.NetworkingV1(), net1.ServiceCIDRs(), net1.IPAddresses(), netutils.IsIPv6CIDR(cidr), nil); err != nil {
		return nil, err
	}
	family := api.IPv4Protocol
	if netutils.IsIPv6CIDR(cidr) {
		family = api.IPv6Protocol
	}
	a.rest, _, _, err = servicestore.NewREST(hooksOnly{}, family,
		map[api.IPFamily]ipallocator.Interface{family: a.ips}, a.ports, nil, nil, nil)
	if err != nil {
		a.ips.Destroy()
		return nil, err
	}
	a.portRepair = portcontroller.NewRepair(3*time.Minute, client.CoreV1(), client.EventsV1(), *pr, a.nodePorts)
	a.repair = ipcontroller.NewRepairIPAddress(3*time.Minute, client, services, net1.ServiceCIDRs(), net1.IPAddresses())
	serviceIP, err := netutils.GetIndexedIP(cidr, 1)
	if err != nil {
		a.ips.Destroy()
		return nil, fmt.Errorf("%w: --service-cluster-ip-range %q: %v", ErrOptions, o.ServiceClusterIPRange, err)
	}
	a.kubernetes = kubernetesservice.New(kubernetesservice.Config{
		PublicIP:           net.ParseIP(o.BindAddress),
		EndpointReconciler: &noEndpoints{EndpointReconciler: reconcilers.NewNoneEndpointReconciler()},
		EndpointInterval:   10 * time.Second,
		ServiceIP:          serviceIP,
		ServicePort:        443,
		PublicServicePort:  port,
	}, client, services)
	return a, nil
}

// run makes the default ServiceCIDR, rebuilds the node-port allocations,
// waits until cluster IPs can be allocated and closes ready; it then
// runs kube's IPAddress repair loop until ctx ends, and stops it all.
func (a *serviceAllocation) run(ctx context.Context) error {
	defer a.ips.Destroy()
	a.factory.Start(ctx.Done())
	defer a.factory.Shutdown()
	defaultservicecidr.NewController(*a.cidr, net.IPNet{}, a.client).Start(ctx)
	if ctx.Err() != nil {
		return nil
	}
	// kube's node-port repair loop: its first run adds the ports of the
	// stored Services to the bitmap; later ones (every 3 minutes) free
	// ports no Service has held for three runs.
	stop := make(chan struct{})
	repaired := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	defer func() {
		close(stop)
		wg.Wait()
	}()
	wg.Go(func() { a.portRepair.RunUntil(func() { once.Do(func() { close(repaired) }) }, stop) })
	select {
	case <-repaired:
	case <-ctx.Done():
		return nil
	}
	// The allocator picks up the ServiceCIDR from its informer: ready
	// once a dry-run allocation succeeds.
	err := wait.PollUntilContextCancel(ctx, 20*time.Millisecond, true, func(context.Context) (bool, error) {
		_, err := a.ips.DryRun().AllocateNext()
		return err == nil, nil
	})
	if err != nil {
		return nil // ctx ended
	}
	close(a.ready)
	wg.Go(func() { a.repair.RunUntil(func() {}, stop) })
	// It makes the Service once the server is ready (it polls /readyz).
	a.kubernetes.Start(stop)
	<-ctx.Done()
	a.kubernetes.Stop()
	return nil
}

// nodePortsKey is where the node-port bitmap is stored (kube's key).
const nodePortsKey = "/registry/ranges/servicenodeports"

// waitReady waits until allocations can be made, or ctx ends.
func (a *serviceAllocation) waitReady(ctx context.Context) error {
	select {
	case <-a.ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// BeginCreate is the Service REST's BeginCreate hook.
func (a *serviceAllocation) BeginCreate(ctx context.Context, obj runtime.Object, opts *metav1.CreateOptions) (genericregistry.FinishFunc, error) {
	if err := a.waitReady(ctx); err != nil {
		return nil, err
	}
	return a.rest.Store.BeginCreate(ctx, obj, opts)
}

// BeginUpdate is the Service REST's BeginUpdate hook.
func (a *serviceAllocation) BeginUpdate(ctx context.Context, obj, old runtime.Object, opts *metav1.UpdateOptions) (genericregistry.FinishFunc, error) {
	if err := a.waitReady(ctx); err != nil {
		return nil, err
	}
	return a.rest.Store.BeginUpdate(ctx, obj, old, opts)
}

// AfterDelete is the Service REST's AfterDelete hook.
func (a *serviceAllocation) AfterDelete(obj runtime.Object, opts *metav1.DeleteOptions) {
	a.rest.Store.AfterDelete(obj, opts)
}

// hooksOnly gives servicestore.NewREST the options its generic store
// needs to be built. Only the store's hooks are used (the server stores
// Services itself), so its storage is never called.
type hooksOnly struct{}

func (hooksOnly) GetRESTOptions(schema.GroupResource, runtime.Object) (generic.RESTOptions, error) {
	return generic.RESTOptions{
		StorageConfig:  &storagebackend.ConfigForResource{},
		ResourcePrefix: "/services/specs",
		Decorator: func(*storagebackend.ConfigForResource, string, func(runtime.Object) (string, error),
			func() runtime.Object, func() runtime.Object, apistorage.AttrFunc, apistorage.IndexerFuncs,
			*cache.Indexers) (apistorage.Interface, factory.DestroyFunc, error) {
			return unusedStorage{}, func() {}, nil
		},
	}, nil
}

// unusedStorage is the storage of the hooks-only store: nothing calls it
// but the store's readiness check.
type unusedStorage struct{ apistorage.Interface }

func (unusedStorage) ReadinessCheck() error { return nil }

// noEndpoints is kube's "none" endpoint reconciler, which never writes the
// kubernetes Service's endpoints, except that its first RemoveEndpoints
// says there was nothing to remove. kube's controller asks it once at
// start for a previous run's endpoints, and the none reconciler's nil
// answer made it log "Found stale data … apiserver didn't exit
// successfully previously" as an error on every start.
type noEndpoints struct {
	reconcilers.EndpointReconciler
	asked atomic.Bool
}

func (n *noEndpoints) RemoveEndpoints(serviceName string, ip net.IP, ports []corev1.EndpointPort) error {
	if !n.asked.Swap(true) {
		return apistorage.NewKeyNotFoundError("endpoints of "+serviceName, 0)
	}
	return n.EndpointReconciler.RemoveEndpoints(serviceName, ip, ports)
}
