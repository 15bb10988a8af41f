package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/wire"
)

// errUnknownResource: the name matches no resource the server serves.
var errUnknownResource = errors.New("listwatch: unknown resource")

type watchOptions struct {
	namespace     string
	allNamespaces bool
	labelSelector string
	fieldSelector string
	resync        time.Duration
	kubeconfig    string
	context       string
	output        string
	logLevel      string
}

func newWatchCommand() *cobra.Command {
	var o watchOptions
	cmd := &cobra.Command{
		Use:   "watch RESOURCE",
		Short: "Run an informer on a resource and print every event it delivers",
		Long: `Run an informer (list, then watch) on RESOURCE and print one line per event:

  2006-01-02 15:04:05 Add: namespace/name
  2006-01-02 15:04:05 Update: namespace/name
  2006-01-02 15:04:05 Delete: namespace/name

RESOURCE is resolved through discovery as kubectl does: plural, singular or
short name, optionally qualified as resource.group or resource.version.group.
Every --resync period the informer re-delivers every cached object as an
Update, even though nothing changed. With -o json each event is one JSON
object per line carrying the object itself. Stop with Ctrl-C.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runWatch(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0], o)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.namespace, "namespace", "n", "", "namespace to watch (default: the kubeconfig context's, or \"default\")")
	f.BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "watch every namespace")
	f.StringVarP(&o.labelSelector, "selector", "l", "", "label selector, e.g. app=web,tier!=db")
	f.StringVar(&o.fieldSelector, "field-selector", "", "field selector, e.g. metadata.name=x")
	f.DurationVar(&o.resync, "resync", 60*time.Second, "resync period: every cached object is re-delivered as an Update (0: never)")
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file (default $KUBECONFIG, then ~/.kube/config)")
	f.StringVar(&o.context, "context", "", "kubeconfig context (default: the current context)")
	f.StringVarP(&o.output, "output", "o", "", "output format: empty for text lines, or json")
	f.StringVar(&o.logLevel, "log-level", "warn", "debug, info, warn or error (logs go to stderr)")
	return cmd
}

func runWatch(ctx context.Context, out, errOut io.Writer, arg string, o watchOptions) error {
	if o.output != "" && o.output != "json" {
		return fmt.Errorf("--output %q: only json is supported", o.output)
	}
	if _, err := object.ParseLabelSelector(o.labelSelector); err != nil {
		return fmt.Errorf("--selector: %w", err)
	}
	if _, err := object.ParseFieldSelector(o.fieldSelector); err != nil {
		return fmt.Errorf("--field-selector: %w", err)
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	log := slog.New(slog.NewTextHandler(errOut, &slog.HandlerOptions{Level: level}))

	cfg, err := client.LoadKubeconfig(o.kubeconfig, o.context)
	if err != nil {
		return err
	}
	cfg.Logger = log
	c, err := client.New(cfg)
	if err != nil {
		return err
	}
	defer c.CloseIdleConnections()

	res, err := resolveResource(ctx, c, arg)
	if err != nil {
		return err
	}
	r := client.NewResource[*object.Unstructured](c, res.GVR)
	if res.Namespaced {
		r = r.Namespace(watchNamespace(o, cfg.Namespace))
	}
	lw := informer.NewListWatchFromClient[*object.Unstructured](r, o.labelSelector, o.fieldSelector)
	// One small list first, so that a refusal (forbidden, bad selector)
	// is an error now rather than an informer retrying forever.
	if _, err := lw.List(ctx, wire.ListOptions{Limit: 1}); err != nil {
		return fmt.Errorf("list %s: %w", res.GVR, err)
	}
	inf, err := informer.New(lw, informer.Options[*object.Unstructured]{
		Transform: informer.DropManagedFields,
		Reflector: informer.ReflectorOptions{Name: res.GVR.String(), Logger: log},
	})
	if err != nil {
		return err
	}
	p := &eventPrinter{w: out, json: o.output == "json"}
	if _, err := inf.AddEventHandler(p.handler(), informer.HandlerOptions{ResyncPeriod: o.resync}); err != nil {
		return err
	}
	err = inf.Run(ctx)
	if ctx.Err() != nil {
		return nil // interrupted: the normal way to stop watching
	}
	return err
}

// watchNamespace is the namespace to watch, as kubectl chooses it: -A for
// all, then -n, then the kubeconfig context's, then "default".
func watchNamespace(o watchOptions, contextNamespace string) string {
	switch {
	case o.allNamespaces:
		return ""
	case o.namespace != "":
		return o.namespace
	case contextNamespace != "":
		return contextNamespace
	}
	return "default"
}

// eventPrinter writes one line per event, as text (the seed article's
// "2006-01-02 15:04:05 Add: ns/name") or as a JSON object. Lines from
// several goroutines never interleave.
type eventPrinter struct {
	mu   sync.Mutex // guards writes to w
	w    io.Writer
	json bool
	now  func() time.Time // nil: time.Now
}

// eventLine is the -o json form of one event.
type eventLine struct {
	Time            string               `json:"time"`
	Type            string               `json:"type"`
	Key             string               `json:"key"`
	ResourceVersion string               `json:"resourceVersion"`
	Object          *object.Unstructured `json:"object"`
}

func (p *eventPrinter) handler() informer.Handler[*object.Unstructured] {
	return informer.HandlerFuncs[*object.Unstructured]{
		AddFunc:    func(o *object.Unstructured, _ bool) { p.print("Add", o) },
		UpdateFunc: func(_, o *object.Unstructured) { p.print("Update", o) },
		DeleteFunc: func(o *object.Unstructured, _ bool) { p.print("Delete", o) },
	}
}

func (p *eventPrinter) print(typ string, o *object.Unstructured) {
	now := time.Now()
	if p.now != nil {
		now = p.now()
	}
	var line []byte
	if p.json {
		b, err := json.Marshal(eventLine{
			Time: now.Format(time.RFC3339Nano), Type: typ, Key: object.Key(o),
			ResourceVersion: o.GetResourceVersion(), Object: o,
		})
		if err != nil {
			b, _ = json.Marshal(map[string]string{"time": now.Format(time.RFC3339Nano), "type": typ, "key": object.Key(o), "error": err.Error()})
		}
		line = append(b, '\n')
	} else {
		line = fmt.Appendf(nil, "%s %s: %s\n", now.Format(time.DateTime), typ, object.Key(o))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	_, _ = p.w.Write(line)
}

// printf writes a free-form line, serialised with the event lines.
func (p *eventPrinter) printf(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, format, args...)
}

// resourceInfo is a resolved resource.
type resourceInfo struct {
	GVR        client.GroupVersionResource
	Kind       string
	Namespaced bool
}

// resourceRef is a parsed RESOURCE argument: "pods", "deploy",
// "deployments.apps", "deployments.v1.apps".
type resourceRef struct {
	name string // lowercased plural, singular or short name
	// rest is what followed the first '.': a group, or version.group.
	rest string
}

// parseResourceArg splits and checks a RESOURCE argument.
func parseResourceArg(arg string) (resourceRef, error) {
	s := strings.ToLower(strings.TrimSpace(arg))
	name, rest, _ := strings.Cut(s, ".")
	if name == "" || strings.ContainsAny(s, "/ \t\n") || strings.HasSuffix(s, ".") || strings.Contains(rest, "..") {
		return resourceRef{}, fmt.Errorf("%w: invalid resource name %q", errUnknownResource, arg)
	}
	return resourceRef{name: name, rest: rest}, nil
}

// matchesGroupVersion reports whether a discovery list for gv ("v1",
// "apps/v1") can hold ref: any when ref names no group, else ref.rest is
// the group, or version.group.
func (ref resourceRef) matchesGroupVersion(gv string) bool {
	if ref.rest == "" {
		return true
	}
	group, version, found := strings.Cut(gv, "/")
	if !found {
		group, version = "", gv
	}
	return ref.rest == group || ref.rest == version+"."+group || (group == "" && ref.rest == version)
}

// resolveResource finds arg in the server's discovery documents.
func resolveResource(ctx context.Context, c *client.Client, arg string) (resourceInfo, error) {
	ref, err := parseResourceArg(arg)
	if err != nil {
		return resourceInfo{}, err
	}
	lists, err := discover(ctx, c, ref)
	if err != nil {
		return resourceInfo{}, err
	}
	return matchResource(ref, lists, arg)
}

// discover reads /api/v1 and the preferred version of every group under
// /apis (every version when ref names one), skipping group versions that
// fail, as kubectl does with a partial discovery.
func discover(ctx context.Context, c *client.Client, ref resourceRef) ([]wire.APIResourceList, error) {
	var lists []wire.APIResourceList
	var core wire.APIResourceList
	if err := c.GetJSON(ctx, "/api/v1", &core); err != nil {
		return nil, fmt.Errorf("discovery /api/v1: %w", err)
	}
	if core.GroupVersion == "" {
		core.GroupVersion = "v1"
	}
	lists = append(lists, core)
	var groups wire.APIGroupList
	if err := c.GetJSON(ctx, "/apis", &groups); err != nil {
		return nil, fmt.Errorf("discovery /apis: %w", err)
	}
	for _, g := range groups.Groups {
		gvs := []wire.GroupVersionForDiscovery{g.PreferredVersion}
		if ref.rest != "" {
			gvs = g.Versions // a qualified name may ask for any version
		}
		for _, gv := range gvs {
			if gv.GroupVersion == "" || !ref.matchesGroupVersion(gv.GroupVersion) {
				continue
			}
			var l wire.APIResourceList
			if err := c.GetJSON(ctx, "/apis/"+gv.GroupVersion, &l); err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				continue
			}
			if l.GroupVersion == "" {
				l.GroupVersion = gv.GroupVersion
			}
			lists = append(lists, l)
		}
	}
	return lists, nil
}

// matchResource picks ref's resource from discovery: plural or singular
// names first, then short names, in discovery order (core first). arg is
// only for the error message.
func matchResource(ref resourceRef, lists []wire.APIResourceList, arg string) (resourceInfo, error) {
	byName := func(r wire.APIResource) bool {
		return strings.EqualFold(r.Name, ref.name) || strings.EqualFold(r.SingularName, ref.name) || strings.EqualFold(r.Kind, ref.name)
	}
	byShortName := func(r wire.APIResource) bool {
		return slices.ContainsFunc(r.ShortNames, func(s string) bool { return strings.EqualFold(s, ref.name) })
	}
	for _, match := range []func(wire.APIResource) bool{byName, byShortName} {
		for _, l := range lists {
			if !ref.matchesGroupVersion(l.GroupVersion) {
				continue
			}
			for _, r := range l.Resources {
				if strings.Contains(r.Name, "/") || !match(r) {
					continue // subresources (pods/log) are not watchable collections
				}
				if !slices.Contains(r.Verbs, "watch") || !slices.Contains(r.Verbs, "list") {
					return resourceInfo{}, fmt.Errorf("%w: %s cannot be listed and watched (verbs %v)", errUnknownResource, r.Name, r.Verbs)
				}
				group, version, found := strings.Cut(l.GroupVersion, "/")
				if !found {
					group, version = "", l.GroupVersion
				}
				return resourceInfo{
					GVR:        client.GroupVersionResource{Group: group, Version: version, Resource: r.Name},
					Kind:       r.Kind,
					Namespaced: r.Namespaced,
				}, nil
			}
		}
	}
	return resourceInfo{}, fmt.Errorf("%w: the server doesn't have a resource type %q", errUnknownResource, arg)
}
