package apiserver

import (
	"fmt"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/listwatch/listwatch/server"
	"github.com/listwatch/listwatch/server/auth"
	"github.com/listwatch/listwatch/server/internal/pki"
)

// buildWebhooks makes the API call the admission webhooks, whose
// configurations (and the namespaces and services they select) it reads
// with informers over a loopback client of the server's own URL as its
// admin, as kube-apiserver does with its loopback client.
func (p *parts) buildWebhooks(o Options, creds *pki.Credentials, authz auth.Authorizer) error {
	if o.DisableAdmission {
		return nil
	}
	cfg := &rest.Config{
		Host: p.url,
		TLSClientConfig: rest.TLSClientConfig{
			CAData: creds.CAPEM, CertData: creds.AdminCertPEM, KeyData: creds.AdminKeyPEM,
		},
		QPS: 50, Burst: 100,
		// kube-apiserver's loopback client's: the managedFields' manager
		// of ResourceQuota's status updates.
		UserAgent: "kube-apiserver/" + server.GitVersion + " (listwatch admission)",
	}
	// Our own HTTP client, not client-go's shared transport cache (which
	// keeps a transport per server for the life of the process), so that
	// its connections are closed when the informers stop.
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return fmt.Errorf("apiserver: admission client: %w", err)
	}
	p.admissionHTTP = hc
	cs, err := kubernetes.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return fmt.Errorf("apiserver: admission client: %w", err)
	}
	dyn, err := dynamic.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return fmt.Errorf("apiserver: admission client: %w", err)
	}
	p.webhooks, err = p.api.EnableWebhooks(cs, dyn, authz, server.AdmissionPlugins{Enable: o.EnableAdmissionPlugins, Disable: o.DisableAdmissionPlugins})
	return err
}
