package apiserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/component-helpers/auth/rbac/reconciliation"
	schedulingapiv1 "k8s.io/kubernetes/pkg/apis/scheduling/v1"
	"k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac/bootstrappolicy"

	"github.com/listwatch/listwatch/server"
	"github.com/listwatch/listwatch/server/auth"
	"github.com/listwatch/listwatch/server/internal/pki"
)

// rbacParts are the RBAC authorizer's informers and the loopback client
// they and the bootstrap policy use.
type rbacParts struct {
	authz  *auth.RBAC
	client kubernetes.Interface
	http   *http.Client
	ready  chan struct{} // closed once bootstrapped and synced
}

// newRBAC builds the RBAC authorizer over a client-go client of the
// server's own URL as its admin (system:masters), as kube-apiserver's
// loopback client.
func newRBAC(url string, creds *pki.Credentials) (*rbacParts, error) {
	cfg := &rest.Config{
		Host: url,
		TLSClientConfig: rest.TLSClientConfig{
			CAData: creds.CAPEM, CertData: creds.AdminCertPEM, KeyData: creds.AdminKeyPEM,
		},
		// No client-side rate limit: the bootstrap policy is a few
		// hundred requests, which 50 QPS would spread over seconds.
		QPS: -1,
		// kube-apiserver's loopback client's: the managedFields' manager.
		UserAgent: "kube-apiserver/" + server.GitVersion + " (listwatch rbac bootstrap)",
		Timeout:   time.Minute,
	}
	// Our own HTTP client (not client-go's shared transport cache), so
	// that its idle connections can be closed when the server stops.
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("apiserver: rbac client: %w", err)
	}
	cs, err := kubernetes.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("apiserver: rbac client: %w", err)
	}
	return &rbacParts{authz: auth.NewRBAC(cs), client: cs, http: hc, ready: make(chan struct{})}, nil
}

// run reconciles kube's bootstrap roles and bindings (kube-apiserver's
// rbac/bootstrap-roles post-start hook), then starts the informers and
// closes ready once they have listed everything, so that a server ready
// authorizes with the bootstrap policy in place. It returns when ctx
// ends, with the informers stopped.
func (r *rbacParts) run(ctx context.Context, log *slog.Logger, phase func(string)) error {
	defer r.http.CloseIdleConnections()
	if err := ensureBootstrapPolicy(ctx, r.client, log); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	phase("rbac bootstrap policy")
	r.authz.Start(ctx)
	defer r.authz.Shutdown()
	if r.authz.WaitForSync(ctx) {
		phase("rbac informers synced")
		close(r.ready)
	}
	<-ctx.Done()
	return nil
}

// rbacWriteTimeout bounds how long the answer to a write of an RBAC
// object waits for the authorizer's informers to reflect it.
const rbacWriteTimeout = 5 * time.Second

// awaitWrite is server.Config.AwaitWrite when o authorizes with RBAC: the
// answer to a committed write of a Role, RoleBinding, ClusterRole or
// ClusterRoleBinding waits until the authorizer (and the rule resolver of
// the escalation checks) sees it, up to rbacWriteTimeout
// (auth.RBAC.AwaitWrite); nil without RBAC.
func (r *rbacParts) awaitWrite(o Options) func(context.Context, server.CommittedWrite) {
	if !slices.Contains(o.AuthorizationModes, auth.ModeRBAC) {
		return nil
	}
	log := o.Logger
	return func(ctx context.Context, w server.CommittedWrite) {
		if !r.authz.AwaitWrite(ctx, w.Group, w.Resource, w.Namespace, w.Name, w.ResourceVersion, w.Gone, rbacWriteTimeout) && ctx.Err() == nil {
			log.Debug("rbac informers did not reflect a write in time; answering anyway",
				"resource", w.Resource, "namespace", w.Namespace, "name", w.Name,
				"resourceVersion", w.ResourceVersion, "gone", w.Gone, "timeouts", r.authz.AwaitTimeouts())
		}
	}
}

// bootstrapAttempts bound how long the bootstrap policy is retried, as
// kube's hook polls for 30s before the server gives up.
const (
	bootstrapInterval = time.Second
	bootstrapTimeout  = 30 * time.Second
	// bootstrapParallelism is how many objects are reconciled at once.
	bootstrapParallelism = 16
)

// ensureBootstrapPolicy creates or reconciles kube's bootstrap ClusterRoles
// (with the controllers' ones), ClusterRoleBindings, and the Roles and
// RoleBindings of kube-system and kube-public, with kube's reconciliation
// (k8s.io/component-helpers/auth/rbac/reconciliation): missing rules and
// subjects are added to objects annotated
// rbac.authorization.kubernetes.io/autoupdate=true (the default), and
// objects annotated "false" are left alone; and the system PriorityClasses.
// It retries as kube's hooks do, and fails if the policy is still
// incomplete after 30s.
func ensureBootstrapPolicy(ctx context.Context, client kubernetes.Interface, log *slog.Logger) error {
	deadline := time.Now().Add(bootstrapTimeout)
	for {
		err := reconcileBootstrapPolicy(ctx, client, log)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return fmt.Errorf("apiserver: unable to initialize roles: %w", err)
		}
		log.Warn("rbac bootstrap policy incomplete; retrying", "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(bootstrapInterval):
		}
	}
}

func reconcileBootstrapPolicy(ctx context.Context, client kubernetes.Interface, log *slog.Logger) error {
	rbac := client.RbacV1()
	// Storage answers first, as kube's hook checks.
	existing, err := rbac.ClusterRoles().List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return err
	}
	// Without any ClusterRole the policy is most likely wholly absent (a
	// fresh data dir): each object's reconciliation is then told on its
	// first Get that the object does not exist, without asking, and goes
	// straight to its Create. Should the object exist after all, the
	// Create fails with AlreadyExists, on which kube's reconciliation
	// starts over with a real Get: the outcome is the same, and a fresh
	// server saves half of the policy's round trips.
	fresh := len(existing.Items) == 0
	// The objects are independent: they are reconciled a few at a time,
	// which makes a fresh server's bootstrap several times faster.
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
		sem  = make(chan struct{}, bootstrapParallelism)
	)
	try := func(what string, f func() error) {
		if ctx.Err() != nil {
			return
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			err := retry.OnError(retry.DefaultBackoff, func(err error) bool {
				return apierrors.IsConflict(err) || apierrors.IsServiceUnavailable(err)
			}, f)
			if err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("%s: %w", what, err))
				mu.Unlock()
			}
		}()
	}
	roleResult := func(kind, name string, res *reconciliation.ReconcileClusterRoleResult) {
		if res.Protected && res.Operation != reconciliation.ReconcileNone {
			log.Warn("skipped reconcile-protected "+kind+" with missing permissions", "name", name, "missing", len(res.MissingRules))
		}
	}
	for _, cr := range append(bootstrappolicy.ClusterRoles(), bootstrappolicy.ControllerRoles()...) {
		crClient := absentFirst(fresh, "clusterroles", reconciliation.RuleOwnerModifier(reconciliation.ClusterRoleModifier{Client: rbac.ClusterRoles()}))
		try("clusterrole "+cr.Name, func() error {
			res, err := (&reconciliation.ReconcileRoleOptions{
				Role:    reconciliation.ClusterRoleRuleOwner{ClusterRole: &cr},
				Client:  crClient,
				Confirm: true,
			}).Run()
			if err == nil {
				roleResult("clusterrole", cr.Name, res)
			}
			return err
		})
	}
	for _, crb := range append(bootstrappolicy.ClusterRoleBindings(), bootstrappolicy.ControllerRoleBindings()...) {
		crbClient := absentFirstBindings(fresh, "clusterrolebindings", reconciliation.ClusterRoleBindingClientAdapter{Client: rbac.ClusterRoleBindings()})
		try("clusterrolebinding "+crb.Name, func() error {
			_, err := (&reconciliation.ReconcileRoleBindingOptions{
				RoleBinding: reconciliation.ClusterRoleBindingAdapter{ClusterRoleBinding: &crb},
				Client:      crbClient,
				Confirm:     true,
			}).Run()
			return err
		})
	}
	for ns, roles := range bootstrappolicy.NamespaceRoles() {
		for _, role := range roles {
			roleClient := absentFirst(fresh, "roles", reconciliation.RuleOwnerModifier(reconciliation.RoleModifier{Client: rbac, NamespaceClient: client.CoreV1().Namespaces()}))
			try("role "+ns+"/"+role.Name, func() error {
				res, err := (&reconciliation.ReconcileRoleOptions{
					Role:    reconciliation.RoleRuleOwner{Role: &role},
					Client:  roleClient,
					Confirm: true,
				}).Run()
				if err == nil {
					roleResult("role", ns+"/"+role.Name, res)
				}
				return err
			})
		}
	}
	for ns, bindings := range bootstrappolicy.NamespaceRoleBindings() {
		for _, rb := range bindings {
			rbClient := absentFirstBindings(fresh, "rolebindings", reconciliation.RoleBindingClientAdapter{Client: rbac, NamespaceClient: client.CoreV1().Namespaces()})
			try("rolebinding "+ns+"/"+rb.Name, func() error {
				_, err := (&reconciliation.ReconcileRoleBindingOptions{
					RoleBinding: reconciliation.RoleBindingAdapter{RoleBinding: &rb},
					Client:      rbClient,
					Confirm:     true,
				}).Run()
				return err
			})
		}
	}
	// kube's scheduling/bootstrap-system-priority-classes hook: the system
	// PriorityClasses (which the Priority admission plugin resolves) are
	// created when missing and otherwise left alone.
	for _, pc := range schedulingapiv1.SystemPriorityClasses() {
		try("priorityclass "+pc.Name, func() error {
			_, err := client.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return nil
			}
			return err
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	return errors.Join(errs...)
}

// absentFirst returns c, or with assumeAbsent a client whose first Get
// answers NotFound without asking (see reconcileBootstrapPolicy); later
// Gets, as kube's reconciliation makes after an AlreadyExists, ask.
func absentFirst(assumeAbsent bool, resource string, c reconciliation.RuleOwnerModifier) reconciliation.RuleOwnerModifier {
	if !assumeAbsent {
		return c
	}
	return &absentRoles{RuleOwnerModifier: c, resource: resource}
}

type absentRoles struct {
	reconciliation.RuleOwnerModifier
	resource string
	asked    atomic.Bool
}

func (c *absentRoles) Get(namespace, name string) (reconciliation.RuleOwner, error) {
	if !c.asked.Swap(true) {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: rbacv1.GroupName, Resource: c.resource}, name)
	}
	return c.RuleOwnerModifier.Get(namespace, name)
}

// absentFirstBindings is absentFirst for role bindings.
func absentFirstBindings(assumeAbsent bool, resource string, c reconciliation.RoleBindingModifier) reconciliation.RoleBindingModifier {
	if !assumeAbsent {
		return c
	}
	return &absentBindings{RoleBindingModifier: c, resource: resource}
}

type absentBindings struct {
	reconciliation.RoleBindingModifier
	resource string
	asked    atomic.Bool
}

func (c *absentBindings) Get(namespace, name string) (reconciliation.RoleBinding, error) {
	if !c.asked.Swap(true) {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: rbacv1.GroupName, Resource: c.resource}, name)
	}
	return c.RoleBindingModifier.Get(namespace, name)
}
