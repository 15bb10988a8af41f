package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/wire"
)

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

	gvr, namespaced, err := c.ResolveResource(ctx, arg)
	if err != nil {
		return err
	}
	r := client.NewResource[*object.Unstructured](c, gvr)
	if namespaced {
		r = r.Namespace(watchNamespace(o, cfg.Namespace))
	}
	lw := informer.NewListWatchFromClient[*object.Unstructured](r, o.labelSelector, o.fieldSelector)
	// One small list first, so that a refusal (forbidden, bad selector)
	// is an error now rather than an informer retrying forever.
	if _, err := lw.List(ctx, wire.ListOptions{Limit: 1}); err != nil {
		return fmt.Errorf("list %s: %w", gvr, err)
	}
	inf, err := informer.New(lw, informer.Options[*object.Unstructured]{
		Transform: informer.DropManagedFields,
		Reflector: informer.ReflectorOptions{Name: gvr.String(), Logger: log},
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
