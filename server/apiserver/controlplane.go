package apiserver

import (
	"context"
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"os"
	"strings"
	"sync"

	"golang.org/x/crypto/cryptobyte"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/kubernetes"
	"k8s.io/component-helpers/apimachinery/lease"
	kubecontrolplane "k8s.io/kubernetes/pkg/controlplane/apiserver"
	"k8s.io/kubernetes/pkg/controlplane/controller/apiserverleasegc"
	"k8s.io/kubernetes/pkg/controlplane/controller/clusterauthenticationtrust"
	"k8s.io/kubernetes/pkg/controlplane/controller/legacytokentracking"
	"k8s.io/utils/clock"
)

// controlPlane runs kube-apiserver's own loops that keep objects in
// kube-system, as its post-start hooks run them, with kube's code over
// the loopback client:
//
//   - the extension-apiserver-authentication ConfigMap, whose client-ca-file
//     aggregated API servers (and others) read to trust the clients the
//     server trusts;
//   - the kube-apiserver-legacy-service-account-token-tracking ConfigMap
//     (since when legacy tokens are tracked);
//   - the server's identity Lease (apiserver-<hash of the hostname>,
//     labelled apiserver.kubernetes.io/identity=kube-apiserver), renewed
//     every 10 s and deleted when the server stops, and the collector of
//     other servers' expired identity Leases.
type controlPlane struct {
	client   kubernetes.Interface
	clientCA []byte
	identity lease.Controller
	wg       sync.WaitGroup
}

// newControlPlane prepares the loops; peer is the server's host:port, the
// address kube's identity Lease gives its peers.
func newControlPlane(client kubernetes.Interface, clientCA []byte, peer string) (*controlPlane, error) {
	hostname, err := os.Hostname()
	if err != nil {
		return nil, fmt.Errorf("apiserver: identity lease: %w", err)
	}
	id := apiserverID(hostname)
	return &controlPlane{
		client:   client,
		clientCA: clientCA,
		identity: lease.NewController(clock.RealClock{}, client, id+"_"+string(uuid.NewUUID()),
			int32(kubecontrolplane.IdentityLeaseDurationSeconds), nil, kubecontrolplane.IdentityLeaseRenewIntervalPeriod,
			id, metav1.NamespaceSystem, identityLabels(hostname, peer)),
	}, nil
}

// apiserverID is kube-apiserver's identity: "apiserver-" and the base32 of
// the first 16 bytes of the SHA-256 of its hostname and "kube-apiserver",
// each length-prefixed.
func apiserverID(hostname string) string {
	var b cryptobyte.Builder
	b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes([]byte(hostname)) })
	b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes([]byte(kubecontrolplane.KubeAPIServer)) })
	hash := sha256.Sum256(b.BytesOrPanic())
	return "apiserver-" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(hash[:16]))
}

// identityLabels marks the identity Lease as kube-apiserver's does: its
// component, its host, and (UnknownVersionInteroperabilityProxy, on by
// default) the address its peers reach it at.
func identityLabels(hostname, peer string) lease.ProcessLeaseFunc {
	return func(l *coordinationv1.Lease) error {
		if l.Labels == nil {
			l.Labels = map[string]string{}
		}
		if l.Annotations == nil {
			l.Annotations = map[string]string{}
		}
		l.Labels[kubecontrolplane.IdentityLeaseComponentLabelKey] = kubecontrolplane.KubeAPIServer
		l.Labels[corev1.LabelHostname] = hostname
		if peer != "" {
			l.Annotations[corev1.AnnotationPeerAdvertiseAddress] = peer
		}
		return nil
	}
}

// start starts the loops; they run until ctx ends, then stop waits for
// them.
func (cp *controlPlane) start(ctx context.Context) error {
	ca, err := dynamiccertificates.NewStaticCAContent("client-ca-bundle", cp.clientCA)
	if err != nil {
		return fmt.Errorf("apiserver: client CA: %w", err)
	}
	trust := clusterauthenticationtrust.NewClusterAuthenticationTrustController(
		clusterauthenticationtrust.ClusterAuthenticationInfo{ClientCA: ca}, cp.client)
	cp.wg.Go(func() { trust.Run(ctx, 1) })
	cp.wg.Go(func() { legacytokentracking.NewController(cp.client).RunWithContext(ctx) })
	cp.wg.Go(func() {
		apiserverleasegc.NewAPIServerLeaseGC(cp.client, kubecontrolplane.IdentityLeaseGCPeriod, metav1.NamespaceSystem,
			kubecontrolplane.IdentityLeaseComponentLabelKey+"="+kubecontrolplane.KubeAPIServer).RunWithContext(ctx)
	})
	if err := cp.identity.Start(ctx.Done()); err != nil {
		return fmt.Errorf("apiserver: identity lease: %w", err)
	}
	return nil
}

// stop waits for the loops (ctx has ended) and deletes the identity
// Lease, as kube-apiserver's pre-shutdown hook does; requests must still
// be served.
func (cp *controlPlane) stop() {
	cp.wg.Wait()
	cp.identity.Stop()
}
