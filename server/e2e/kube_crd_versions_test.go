package e2e

import (
	"testing"

	"github.com/listwatch/listwatch/server/internal/testsupport/kubeapiserver"
)

// TestKubeCRDStoredVersions: a CRD's status.storedVersions lists every
// version ever stored, as kube's strategy keeps it: a new storage version
// is appended, a version still listed may not leave spec.versions, and a
// /status write (what a storage version migrator does) sets the list.
// Compared with a real kube-apiserver, or without the binary with the
// answers kube-apiserver v1.37.2 gave.
func TestKubeCRDStoredVersions(t *testing.T) {
	t.Parallel()
	s := startServer(t, "")
	got := crdVersionsScript(t, newRawClient(t, restConfig(t, s)))
	if _, err := kubeapiserver.Binary(); err != nil {
		t.Logf("no kube-apiserver (%v): comparing with its answers on record", err)
		compareLogs(t, got, kubeCRDVersionsLog)
		return
	}
	compareLogs(t, got, crdVersionsScript(t, newRawClient(t, kubeRESTConfig(t))))
}

func crdVersionsScript(t *testing.T, c *rawClient) []string {
	const crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	name := "svers." + crGroup
	t.Cleanup(func() { c.do("DELETE", crds+"/"+name, "", "") })
	version := func(v string, storage bool) string {
		s := "false"
		if storage {
			s = "true"
		}
		return `{"name":"` + v + `","served":true,"storage":` + s + `,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}`
	}
	crd := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"` + name + `"},
		"spec":{"group":"` + crGroup + `","scope":"Namespaced","names":{"plural":"svers","singular":"sver","kind":"Sver"},
		"versions":[` + version("v1", true) + `,` + version("v2", false) + `]}}`
	const jsonPatch = "application/json-patch+json"
	fields := []string{"status.storedVersions"}
	c.step("create", "POST", crds, jsonCT, crd, fields...)
	c.step("storage version v2", "PATCH", crds+"/"+name, jsonPatch,
		`[{"op":"replace","path":"/spec/versions/0/storage","value":false},{"op":"replace","path":"/spec/versions/1/storage","value":true}]`, fields...)
	c.step("v1 removed while stored", "PATCH", crds+"/"+name, jsonPatch, `[{"op":"remove","path":"/spec/versions/0"}]`, fields...)
	c.step("status without the storage version", "PATCH", crds+"/"+name+"/status", mergePatch, `{"status":{"storedVersions":["v1"]}}`, fields...)
	c.step("status migrated", "PATCH", crds+"/"+name+"/status", mergePatch, `{"status":{"storedVersions":["v2"]}}`, fields...)
	c.step("v1 removed once migrated", "PATCH", crds+"/"+name, jsonPatch, `[{"op":"remove","path":"/spec/versions/0"}]`, fields...)
	return c.log
}

// kubeCRDVersionsLog is crdVersionsScript's log against kube-apiserver v1.37.2.
var kubeCRDVersionsLog = []string{
	`create: 201 status.storedVersions=["v1"]`,
	`storage version v2: 200 status.storedVersions=["v1","v2"]`,
	`v1 removed while stored: 422 Invalid "CustomResourceDefinition.apiextensions.k8s.io \"svers.scaletest.example.com\" is invalid: status.storedVersions[0]: Invalid value: \"v1\": missing from spec.versions; v1 was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in v1 and removes v1 from status.storedVersions"`,
	`status without the storage version: 200 status.storedVersions=["v1"]`,
	`status migrated: 200 status.storedVersions=["v2"]`,
	`v1 removed once migrated: 200 status.storedVersions=["v2"]`,
}
