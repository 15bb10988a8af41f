package server

import (
	"testing"

	crdregistry "k8s.io/apiextensions-apiserver/pkg/registry/customresourcedefinition"
	"k8s.io/apiserver/pkg/registry/rest"
	apiserviceetcd "k8s.io/kube-aggregator/pkg/registry/apiservice/etcd"
	vapstorage "k8s.io/kubernetes/pkg/registry/admissionregistration/validatingadmissionpolicy/storage"
	dsstorage "k8s.io/kubernetes/pkg/registry/apps/daemonset/storage"
	deploymentstorage "k8s.io/kubernetes/pkg/registry/apps/deployment/storage"
	rsstorage "k8s.io/kubernetes/pkg/registry/apps/replicaset/storage"
	stsstorage "k8s.io/kubernetes/pkg/registry/apps/statefulset/storage"
	hpastorage "k8s.io/kubernetes/pkg/registry/autoscaling/horizontalpodautoscaler/storage"
	cronjobstorage "k8s.io/kubernetes/pkg/registry/batch/cronjob/storage"
	jobstorage "k8s.io/kubernetes/pkg/registry/batch/job/storage"
	csrstorage "k8s.io/kubernetes/pkg/registry/certificates/certificates/storage"
	pcrstorage "k8s.io/kubernetes/pkg/registry/certificates/podcertificaterequest/storage"
	nsstorage "k8s.io/kubernetes/pkg/registry/core/namespace/storage"
	nodestorage "k8s.io/kubernetes/pkg/registry/core/node/storage"
	pvstorage "k8s.io/kubernetes/pkg/registry/core/persistentvolume/storage"
	pvcstorage "k8s.io/kubernetes/pkg/registry/core/persistentvolumeclaim/storage"
	podstorage "k8s.io/kubernetes/pkg/registry/core/pod/storage"
	rcstorage "k8s.io/kubernetes/pkg/registry/core/replicationcontroller/storage"
	quotastorage "k8s.io/kubernetes/pkg/registry/core/resourcequota/storage"
	svcstorage "k8s.io/kubernetes/pkg/registry/core/service/storage"
	sastorage "k8s.io/kubernetes/pkg/registry/core/serviceaccount/storage"
	fsstorage "k8s.io/kubernetes/pkg/registry/flowcontrol/flowschema/storage"
	plcstorage "k8s.io/kubernetes/pkg/registry/flowcontrol/prioritylevelconfiguration/storage"
	ingressstorage "k8s.io/kubernetes/pkg/registry/networking/ingress/storage"
	cidrstorage "k8s.io/kubernetes/pkg/registry/networking/servicecidr/storage"
	pdbstorage "k8s.io/kubernetes/pkg/registry/policy/poddisruptionbudget/storage"
	dtrstorage "k8s.io/kubernetes/pkg/registry/resource/devicetaintrule/storage"
	claimstorage "k8s.io/kubernetes/pkg/registry/resource/resourceclaim/storage"
	csinodestorage "k8s.io/kubernetes/pkg/registry/storage/csinode/storage"
	vastorage "k8s.io/kubernetes/pkg/registry/storage/volumeattachment/storage"
	svmstorage "k8s.io/kubernetes/pkg/registry/storagemigration/storagemigration/storage"

	"github.com/listwatch/listwatch/server/request"
)

// TestTableConvertsAsKubeStorage: tableConverts offers a Table of a
// subresource exactly where kube's storage behind it is a
// rest.TableConvertor, which kube's installer makes the endpoint's
// convertor: every status subresource serve serves (each built-in
// resource with one must be listed here), the workloads' scale, and the
// subresources answered by kube's storage of their own.
func TestTableConvertsAsKubeStorage(t *testing.T) {
	status := map[string]rest.Storage{
		"/namespaces":                                       &nsstorage.StatusREST{},
		"/nodes":                                            &nodestorage.StatusREST{},
		"/persistentvolumes":                                &pvstorage.StatusREST{},
		"/persistentvolumeclaims":                           &pvcstorage.StatusREST{},
		"/pods":                                             &podstorage.StatusREST{},
		"/replicationcontrollers":                           &rcstorage.StatusREST{},
		"/resourcequotas":                                   &quotastorage.StatusREST{},
		"/services":                                         &svcstorage.StatusREST{},
		groupApps + "/daemonsets":                           &dsstorage.StatusREST{},
		groupApps + "/deployments":                          &deploymentstorage.StatusREST{},
		groupApps + "/replicasets":                          &rsstorage.StatusREST{},
		groupApps + "/statefulsets":                         &stsstorage.StatusREST{},
		groupBatch + "/jobs":                                &jobstorage.StatusREST{},
		groupBatch + "/cronjobs":                            &cronjobstorage.StatusREST{},
		groupPolicy + "/poddisruptionbudgets":               &pdbstorage.StatusREST{},
		groupNetworking + "/ingresses":                      &ingressstorage.StatusREST{},
		groupNetworking + "/servicecidrs":                   &cidrstorage.StatusREST{},
		groupAdmission + "/validatingadmissionpolicies":     &vapstorage.StatusREST{},
		groupAutoscaling + "/horizontalpodautoscalers":      &hpastorage.StatusREST{},
		groupCertificates + "/certificatesigningrequests":   &csrstorage.StatusREST{},
		groupCertificates + "/podcertificaterequests":       &pcrstorage.StatusREST{},
		groupFlowcontrol + "/flowschemas":                   &fsstorage.StatusREST{},
		groupFlowcontrol + "/prioritylevelconfigurations":   &plcstorage.StatusREST{},
		groupResourceDRA + "/devicetaintrules":              &dtrstorage.StatusREST{},
		groupResourceDRA + "/resourceclaims":                &claimstorage.StatusREST{},
		groupStorage + "/csinodes":                          &csinodestorage.StatusREST{},
		groupStorage + "/volumeattachments":                 &vastorage.StatusREST{},
		groupStorageMigration + "/storageversionmigrations": &svmstorage.StatusREST{},
		groupCRD + "/customresourcedefinitions":             &crdregistry.StatusREST{},
		groupAPIRegistration + "/apiservices":               &apiserviceetcd.StatusREST{},
	}
	byKey := map[string]*resource{}
	for _, r := range builtinResources() {
		byKey[r.group+"/"+r.plural] = r
		if !r.hasStatus {
			continue
		}
		kube, ok := status[r.group+"/"+r.plural]
		if !ok {
			t.Errorf("%s/status: no kube storage listed", r.gr())
			continue
		}
		_, want := kube.(rest.TableConvertor)
		if got := tableConverts(r, &request.Info{Subresource: "status", Name: "x"}); got != want {
			t.Errorf("%s/status: tableConverts %v, kube's %T is a TableConvertor: %v", r.gr(), got, kube, want)
		}
	}
	for _, sub := range []struct {
		key, sub string
		kube     rest.Storage
	}{
		{groupApps + "/deployments", "scale", &deploymentstorage.ScaleREST{}},
		{groupApps + "/replicasets", "scale", &rsstorage.ScaleREST{}},
		{groupApps + "/statefulsets", "scale", &stsstorage.ScaleREST{}},
		{"/replicationcontrollers", "scale", &rcstorage.ScaleREST{}},
		{"/pods", "ephemeralcontainers", &podstorage.EphemeralContainersREST{}},
		{"/pods", "resize", &podstorage.ResizeREST{}},
		{"/pods", "binding", &podstorage.BindingREST{}},
		{"/pods", "eviction", &podstorage.EvictionREST{}},
		{"/serviceaccounts", "token", &sastorage.TokenREST{}},
		{"/namespaces", "finalize", &nsstorage.FinalizeREST{}},
		{groupCertificates + "/certificatesigningrequests", "approval", &csrstorage.ApprovalREST{}},
	} {
		r := byKey[sub.key]
		if r == nil {
			t.Fatalf("%s: not served", sub.key)
		}
		_, want := sub.kube.(rest.TableConvertor)
		if got := tableConverts(r, &request.Info{Subresource: sub.sub, Name: "x"}); got != want {
			t.Errorf("%s/%s: tableConverts %v, kube's %T is a TableConvertor: %v", r.gr(), sub.sub, got, sub.kube, want)
		}
	}
}
