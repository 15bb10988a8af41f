package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"net/url"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/listwatch/listwatch/server/apiserver"
	"github.com/listwatch/listwatch/server/apiserver/apiservertest"
)

func service(name string, typ corev1.ServiceType, clusterIP string, nodePort int32) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{Type: typ, ClusterIP: clusterIP,
			Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080), NodePort: nodePort}}},
	}
}

// TestServiceAllocation: Services get cluster IPs from
// --service-cluster-ip-range (the default ServiceCIDR, each IP an
// IPAddress object) and node ports from --service-node-port-range, as
// kube-apiserver allocates them; deletes (one by one, and a namespace's)
// release them at once; dry runs allocate nothing; and a restarted server
// still knows what is taken.
func TestServiceAllocation(t *testing.T) {
	t.Parallel()
	ranges := func(o *apiserver.Options) {
		o.ServiceClusterIPRange = "10.96.0.0/28"
		o.ServiceNodePortRange = "30100-30104"
	}
	s := startServer(t, "", ranges, apiservertest.WithControllers)
	cs := kubernetes.NewForConfigOrDie(restConfig(t, s))
	ctx := t.Context()
	svcs := cs.CoreV1().Services("default")

	cidr, err := cs.NetworkingV1().ServiceCIDRs().Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cidr.Spec.CIDRs, []string{"10.96.0.0/28"}) || len(cidr.Status.Conditions) != 1 ||
		cidr.Status.Conditions[0].Type != networkingv1.ServiceCIDRConditionReady || cidr.Status.Conditions[0].Status != metav1.ConditionTrue {
		t.Fatalf("default ServiceCIDR: %+v", cidr)
	}

	// The default namespace's "kubernetes" Service, as kube-apiserver
	// makes it once ready: the range's first address, 443 to the server.
	var k *corev1.Service
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		k, err = svcs.Get(ctx, "kubernetes", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("no kubernetes Service: %v", err)
	}
	u, _ := url.Parse(s.URL())
	if k.Spec.ClusterIP != "10.96.0.1" || len(k.Spec.Ports) != 1 || k.Spec.Ports[0].Name != "https" || k.Spec.Ports[0].Port != 443 ||
		k.Spec.Ports[0].TargetPort.String() != u.Port() || k.Labels["component"] != "apiserver" {
		t.Fatalf("kubernetes Service: %+v %v", k.Spec, k.Labels)
	}

	a, err := svcs.Create(ctx, service("a", corev1.ServiceTypeClusterIP, "", 0), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ip, err := netip.ParseAddr(a.Spec.ClusterIP)
	if err != nil || !netip.MustParsePrefix("10.96.0.0/28").Contains(ip) || !reflect.DeepEqual(a.Spec.ClusterIPs, []string{a.Spec.ClusterIP}) ||
		a.Spec.IPFamilyPolicy == nil || *a.Spec.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack ||
		!reflect.DeepEqual(a.Spec.IPFamilies, []corev1.IPFamily{corev1.IPv4Protocol}) {
		t.Fatalf("allocated: %+v", a.Spec)
	}
	addr, err := cs.NetworkingV1().IPAddresses().Get(ctx, a.Spec.ClusterIP, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p := addr.Spec.ParentRef; p == nil || p.Resource != "services" || p.Namespace != "default" || p.Name != "a" ||
		addr.Labels["ipaddress.kubernetes.io/managed-by"] != "ipallocator.k8s.io" {
		t.Fatalf("IPAddress: %+v", addr)
	}

	// Taken and foreign addresses and ports: kube's 422s.
	invalid := func(svc *corev1.Service, msg string) {
		t.Helper()
		_, err := svcs.Create(ctx, svc, metav1.CreateOptions{})
		var st *apierrors.StatusError
		if !apierrors.IsInvalid(err) || !asStatus(err, &st) || len(st.ErrStatus.Details.Causes) != 1 || st.ErrStatus.Details.Causes[0].Message != msg {
			t.Fatalf("create %s: %v, want 422 %q", svc.Name, err, msg)
		}
	}
	invalid(service("b", corev1.ServiceTypeClusterIP, a.Spec.ClusterIP, 0),
		`Invalid value: ["`+a.Spec.ClusterIP+`"]: failed to allocate IP `+a.Spec.ClusterIP+`: provided IP is already allocated`)
	invalid(service("b", corev1.ServiceTypeClusterIP, "10.0.0.5", 0),
		`Invalid value: ["10.0.0.5"]: failed to allocate IP 10.0.0.5: the provided network does not match the current range`)
	c, err := svcs.Create(ctx, service("c", corev1.ServiceTypeNodePort, "", 30100), metav1.CreateOptions{})
	if err != nil || c.Spec.Ports[0].NodePort != 30100 {
		t.Fatalf("node port: %v %+v", err, c)
	}
	invalid(service("d", corev1.ServiceTypeNodePort, "", 30100), "Invalid value: 30100: provided port is already allocated")
	invalid(service("d", corev1.ServiceTypeNodePort, "", 31000),
		"Invalid value: 31000: provided port is not in the valid range. The range of valid ports is 30100-30104")
	d, err := svcs.Create(ctx, service("d", corev1.ServiceTypeNodePort, "", 0), metav1.CreateOptions{})
	if err != nil || d.Spec.Ports[0].NodePort < 30101 || d.Spec.Ports[0].NodePort > 30104 {
		t.Fatalf("node port allocated: %v %+v", err, d)
	}

	// A dry run answers an allocation and keeps none (of an address no
	// service has: as kube, a dry run does not check that).
	free := ""
	for a := netip.MustParseAddr("10.96.0.1"); free == "" && a.Less(netip.MustParseAddr("10.96.0.15")); a = a.Next() {
		if _, err := cs.NetworkingV1().IPAddresses().Get(ctx, a.String(), metav1.GetOptions{}); apierrors.IsNotFound(err) {
			free = a.String()
		}
	}
	dry, err := svcs.Create(ctx, service("dry", corev1.ServiceTypeClusterIP, free, 0), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil || dry.Spec.ClusterIP != free {
		t.Fatalf("dry run: %v %+v", err, dry)
	}
	if _, err := cs.NetworkingV1().IPAddresses().Get(ctx, free, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("dry run kept its IPAddress: %v", err)
	}

	// An update from ClusterIP to NodePort allocates a port; back releases it.
	patch := func(name, p string) *corev1.Service {
		t.Helper()
		out, err := svcs.Patch(ctx, name, types.StrategicMergePatchType, []byte(p), metav1.PatchOptions{})
		if err != nil {
			t.Fatalf("patch %s %s: %v", name, p, err)
		}
		return out
	}
	if got := patch("a", `{"spec":{"type":"NodePort"}}`); got.Spec.Ports[0].NodePort == 0 {
		t.Fatalf("type NodePort: %+v", got.Spec)
	}
	if got := patch("d", `{"spec":{"type":"ClusterIP","ports":[{"port":80,"nodePort":null}]}}`); got.Spec.Ports[0].NodePort != 0 {
		t.Fatalf("type ClusterIP: %+v", got.Spec)
	}

	// A delete releases at once.
	if err := svcs.Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.NetworkingV1().IPAddresses().Get(ctx, a.Spec.ClusterIP, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("deleted service's IPAddress: %v", err)
	}
	b, err := svcs.Create(ctx, service("b", corev1.ServiceTypeClusterIP, a.Spec.ClusterIP, 0), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("released IP: %v", err)
	}
	// So does a namespace's deletion, for its services.
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gone"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	g, err := cs.CoreV1().Services("gone").Create(ctx, service("g", corev1.ServiceTypeNodePort, "", 30104), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().Namespaces().Delete(ctx, "gone", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The namespace controller deletes its services, then it.
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().Namespaces().Get(ctx, "gone", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("namespace not deleted: %v", err)
	}
	if _, err := cs.NetworkingV1().IPAddresses().Get(ctx, g.Spec.ClusterIP, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("IPAddress of a service of a deleted namespace: %v", err)
	}
	if _, err := svcs.Create(ctx, service("e", corev1.ServiceTypeNodePort, "", 30104), metav1.CreateOptions{}); err != nil {
		t.Fatalf("node port of a deleted namespace's service: %v", err)
	}

	// After a restart, what is taken stays taken.
	dir := s.Dir
	s.Stop()
	s = startServer(t, dir, ranges, apiservertest.WithControllers)
	cs = kubernetes.NewForConfigOrDie(restConfig(t, s))
	svcs = cs.CoreV1().Services("default")
	invalid(service("f", corev1.ServiceTypeNodePort, "", 30100), "Invalid value: 30100: provided port is already allocated")
	invalid(service("f", corev1.ServiceTypeClusterIP, b.Spec.ClusterIP, 0),
		`Invalid value: ["`+b.Spec.ClusterIP+`"]: failed to allocate IP `+b.Spec.ClusterIP+`: provided IP is already allocated`)
}

func asStatus(err error, st **apierrors.StatusError) bool {
	s, ok := err.(*apierrors.StatusError)
	*st = s
	return ok
}

// TestKubeServiceAllocationSameAsOurs: the same Service writes to a real
// kube-apiserver and to serve (both on 10.0.0.0/24 and kube's default
// node ports) get the same refusals, word for word, and the same
// allocated fields. Addresses and ports are from the ranges' static
// bands, which dynamic allocation leaves alone while the upper band has
// room, so other tests' services on the shared kube-apiserver cannot take
// them.
//
// kube-apiserver's dry run allocates from a ServiceCIDR picked at random
// (its MetaAllocator.DryRun returns the first allocator of a map), so a
// dry run there refuses an address of the default range whenever another
// ServiceCIDR exists. The test removes those left by other tests on the
// shared kube-apiserver (TestKubeKindsKubectlSameAsOurs creates one)
// before it starts.
func TestKubeServiceAllocationSameAsOurs(t *testing.T) {
	t.Parallel()
	kc := kubeClientset(t)
	onlyDefaultServiceCIDR(t, kc)
	oc := kubernetes.NewForConfigOrDie(restConfig(t, startServer(t, "")))
	ns := fmt.Sprintf("lw-svc-%d", time.Now().UnixNano()%1e9)
	for _, cs := range []kubernetes.Interface{kc, oc} {
		if _, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = kc.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	type step struct {
		name   string
		do     func(cs kubernetes.Interface) (*corev1.Service, error)
		fields func(*corev1.Service) any // compared when both succeed
	}
	create := func(svc *corev1.Service, dry bool) func(kubernetes.Interface) (*corev1.Service, error) {
		return func(cs kubernetes.Interface) (*corev1.Service, error) {
			o := metav1.CreateOptions{}
			if dry {
				o.DryRun = []string{metav1.DryRunAll}
			}
			return cs.CoreV1().Services(ns).Create(t.Context(), svc, o)
		}
	}
	patch := func(name, p string) func(kubernetes.Interface) (*corev1.Service, error) {
		return func(cs kubernetes.Interface) (*corev1.Service, error) {
			return cs.CoreV1().Services(ns).Patch(t.Context(), name, types.StrategicMergePatchType, []byte(p), metav1.PatchOptions{})
		}
	}
	del := func(name string) func(kubernetes.Interface) (*corev1.Service, error) {
		return func(cs kubernetes.Interface) (*corev1.Service, error) {
			return nil, cs.CoreV1().Services(ns).Delete(t.Context(), name, metav1.DeleteOptions{})
		}
	}
	spec := func(s *corev1.Service) any {
		sp := s.Spec
		return []any{sp.Type, sp.ClusterIP, sp.ClusterIPs, sp.IPFamilies, sp.IPFamilyPolicy, sp.Ports, sp.HealthCheckNodePort}
	}
	// Dynamically allocated values differ from server to server: only
	// whether they are set is compared.
	shape := func(s *corev1.Service) any {
		sp := s.Spec
		var ports []bool
		for _, p := range sp.Ports {
			ports = append(ports, p.NodePort != 0)
		}
		return []any{sp.Type, sp.ClusterIP != "", len(sp.ClusterIPs), sp.IPFamilies, sp.IPFamilyPolicy, ports, sp.HealthCheckNodePort != 0}
	}
	lb := service("lb", corev1.ServiceTypeLoadBalancer, "", 0)
	lb.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	headless := service("headless", corev1.ServiceTypeClusterIP, "None", 0)
	ext := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "ext"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "x.example.com"}}
	steps := []step{
		{"requested IP", create(service("s1", corev1.ServiceTypeClusterIP, "10.0.0.10", 0), false), spec},
		{"IP taken", create(service("s2", corev1.ServiceTypeClusterIP, "10.0.0.10", 0), false), nil},
		{"IP out of range", create(service("s2", corev1.ServiceTypeClusterIP, "192.168.0.5", 0), false), nil},
		{"network address", create(service("s2", corev1.ServiceTypeClusterIP, "10.0.0.0", 0), false), nil},
		{"broadcast address", create(service("s2", corev1.ServiceTypeClusterIP, "10.0.0.255", 0), false), nil},
		{"not an IP", create(service("s2", corev1.ServiceTypeClusterIP, "bogus", 0), false), nil},
		{"headless", create(headless, false), spec},
		{"requested node port", create(service("n1", corev1.ServiceTypeNodePort, "10.0.0.11", 30010), false), spec},
		{"node port taken", create(service("n2", corev1.ServiceTypeNodePort, "", 30010), false), nil},
		{"node port out of range", create(service("n2", corev1.ServiceTypeNodePort, "", 20000), false), nil},
		{"load balancer, local", create(lb, false), shape},
		{"external name", create(ext, false), spec},
		{"external name to ClusterIP", patch("ext", `{"spec":{"type":"ClusterIP","externalName":null,"ports":[{"port":80}]}}`), shape},
		{"cluster IP is immutable", patch("s1", `{"spec":{"clusterIP":"10.0.0.12","clusterIPs":["10.0.0.12"]}}`), nil},
		{"ClusterIP to NodePort", patch("s1", `{"spec":{"type":"NodePort"}}`), shape},
		{"NodePort to ClusterIP keeps its port", patch("n1", `{"spec":{"type":"ClusterIP"}}`), spec},
		{"dry run", create(service("dry", corev1.ServiceTypeClusterIP, "10.0.0.13", 0), true), spec},
		{"dry run kept nothing", create(service("dry2", corev1.ServiceTypeClusterIP, "10.0.0.13", 0), false), spec},
		{"delete", del("s1"), nil},
		{"deleted IP is free", create(service("s3", corev1.ServiceTypeClusterIP, "10.0.0.10", 0), false), spec},
	}
	for _, st := range steps {
		want, kerr := st.do(kc)
		got, oerr := st.do(oc)
		if (kerr == nil) != (oerr == nil) {
			t.Fatalf("%s: kube: %v; ours: %v", st.name, kerr, oerr)
		}
		if kerr != nil {
			ks, os := kerr.(*apierrors.StatusError), oerr.(*apierrors.StatusError)
			if ks == nil || os == nil || !reflect.DeepEqual(ks.ErrStatus, os.ErrStatus) {
				kj, _ := json.Marshal(kerr)
				oj, _ := json.Marshal(oerr)
				t.Fatalf("%s: status differs:\nkube: %s\nours: %s", st.name, kj, oj)
			}
			continue
		}
		if st.fields != nil {
			if k, o := st.fields(want), st.fields(got); !reflect.DeepEqual(k, o) {
				kj, _ := json.Marshal(k)
				oj, _ := json.Marshal(o)
				t.Errorf("%s: kube %s, ours %s", st.name, kj, oj)
			}
		}
	}
}

// onlyDefaultServiceCIDR deletes every ServiceCIDR but kube-apiserver's
// default ("kubernetes"), clearing the finalizer that only
// kube-controller-manager (not running here) would remove, and waits until
// they are gone.
func onlyDefaultServiceCIDR(t *testing.T, cs kubernetes.Interface) {
	ctx := t.Context()
	api := cs.NetworkingV1().ServiceCIDRs()
	others := func() []string {
		l, err := api.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, c := range l.Items {
			if c.Name != "kubernetes" {
				names = append(names, c.Name)
			}
		}
		return names
	}
	left := others()
	if len(left) > 0 {
		t.Logf("removing ServiceCIDRs %v from kube-apiserver", left)
	}
	for _, name := range left {
		if _, err := api.Patch(ctx, name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		if err := api.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return len(others()) == 0, nil
	}); err != nil {
		t.Fatalf("ServiceCIDRs other than the default remain: %v", others())
	}
}
