package apiserver

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"

	restful "github.com/emicklei/go-restful/v3"
	"k8s.io/client-go/util/keyutil"
	"k8s.io/kubernetes/pkg/routes"
	kubesa "k8s.io/kubernetes/pkg/serviceaccount"

	"github.com/listwatch/listwatch/server"
	"github.com/listwatch/listwatch/server/auth"
	"github.com/listwatch/listwatch/server/storage"
)

// Service-account tokens: the signing key (a file given, or one generated
// in the data dir on first start and kept), the issuer, kube's
// authenticator of the tokens, and the issuer's OIDC discovery documents.

// ServiceAccountKeyFile is the signing key generated in the data dir when
// no --service-account-signing-key-file is given (ECDSA P-256, PEM, 0600).
const ServiceAccountKeyFile = "service-account.key"

// DefaultServiceAccountIssuer is the issuer (and so the API audience) when
// none is given: the in-cluster name of the API server, as the
// kube-apiserver of the side-by-side tests is run.
const DefaultServiceAccountIssuer = "https://kubernetes.default.svc"

// saTokens is what serving service-account tokens needs.
type saTokens struct {
	issuer kubesa.TokenGenerator
	authn  auth.ServiceAccountTokens
	keys   kubesa.PublicKeysGetter
	oidc   *openIDHandler
}

// newServiceAccountTokens loads (or generates) the signing key and builds
// the issuer and authenticator over store.
func newServiceAccountTokens(o Options, store storage.Interface) (*saTokens, error) {
	keyFile := o.ServiceAccountSigningKeyFile
	if keyFile == "" {
		keyFile = filepath.Join(o.DataDir, ServiceAccountKeyFile)
		if err := ensureSigningKey(keyFile); err != nil {
			return nil, err
		}
	}
	b, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("apiserver: service-account signing key: %w", err)
	}
	signing, err := keyutil.ParsePrivateKeyPEM(b)
	if err != nil {
		return nil, fmt.Errorf("apiserver: service-account signing key %s: %w", keyFile, err)
	}
	issuer, err := kubesa.JWTTokenGenerator(o.ServiceAccountIssuers[0], signing)
	if err != nil {
		return nil, fmt.Errorf("apiserver: service-account signing key %s: %w", keyFile, err)
	}
	pubs := []any{publicOf(signing)}
	for _, f := range o.ServiceAccountKeyFiles {
		ks, err := keyutil.PublicKeysFromFile(f)
		if err != nil {
			return nil, fmt.Errorf("apiserver: --service-account-key-file: %w", err)
		}
		pubs = append(pubs, ks...)
	}
	keys, err := kubesa.StaticPublicKeysGetter(pubs)
	if err != nil {
		return nil, fmt.Errorf("apiserver: service-account keys: %w", err)
	}
	authn, err := auth.NewServiceAccountTokens(o.ServiceAccountIssuers, pubs, o.APIAudiences, auth.ServiceAccountGetter{Store: store})
	if err != nil {
		return nil, err
	}
	return &saTokens{issuer: issuer, authn: authn, keys: keys, oidc: &openIDHandler{}}, nil
}

// serverConfig is the server's configuration of the token subresource.
func (t *saTokens) serverConfig(o Options) *server.ServiceAccountTokenConfig {
	return &server.ServiceAccountTokenConfig{
		Issuer:                t.issuer,
		Authenticator:         t.authn.Token,
		MaxExpiration:         o.ServiceAccountMaxTokenExpiration,
		ExtendExpiration:      true, // kube's --service-account-extend-token-expiration default
		MaxExtendedExpiration: kubesa.ExpirationExtensionSeconds * 1e9,
	}
}

// publicOf is the public key of a private key.
func publicOf(k any) any {
	if s, ok := k.(crypto.Signer); ok {
		return s.Public()
	}
	return k
}

// ensureSigningKey generates the signing key at path unless a file is
// there: ECDSA P-256 in PEM, mode 0600, written to a temporary file and
// linked into place, so a crash leaves no half key and a key is never
// replaced (tokens it signed stay valid across restarts).
func ensureSigningKey(path string) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("apiserver: service-account signing key: %w", err)
	}
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("apiserver: service-account signing key: %w", err)
	}
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		return fmt.Errorf("apiserver: service-account signing key: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("apiserver: service-account signing key: %w", err)
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("apiserver: service-account signing key: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	werr := errors.Join(f.Chmod(0o600), pem.Encode(f, &pem.Block{Type: keyutil.ECPrivateKeyBlockType, Bytes: der}), f.Sync())
	if err := errors.Join(werr, f.Close()); err != nil {
		return fmt.Errorf("apiserver: service-account signing key: %w", err)
	}
	// Link, not rename: a key another server wrote meanwhile is kept.
	if err := os.Link(tmp, path); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("apiserver: service-account signing key: %w", err)
	}
	return nil
}

// openIDHandler serves kube's OIDC discovery routes
// (k8s.io/kubernetes/pkg/routes OpenIDMetadataServer) once the server's
// URL, and so the default jwks_uri, is known; until then (or without
// discovery) the paths go to fallback, the API's 404.
type openIDHandler struct {
	h        atomic.Pointer[http.Handler]
	fallback http.Handler
}

// install builds kube's provider for issuer with jwksURI (or, if empty,
// https://externalAddress/openid/v1/jwks). As kube-apiserver, an issuer
// that is not an https URL serves no discovery (the error is returned for
// the log).
func (o *openIDHandler) install(issuer, jwksURI, externalAddress string, keys kubesa.PublicKeysGetter) error {
	p, err := kubesa.NewOpenIDMetadataProvider(issuer, jwksURI, externalAddress, keys)
	if err != nil {
		return err
	}
	c := restful.NewContainer()
	routes.NewOpenIDMetadataServer(p).Install(c)
	var h http.Handler = c
	o.h.Store(&h)
	return nil
}

func (o *openIDHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := o.h.Load()
	if h == nil {
		o.fallback.ServeHTTP(w, r)
		return
	}
	(*h).ServeHTTP(w, r)
}
