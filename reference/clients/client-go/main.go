// Command apfkit-client-go drives a server with client-go as most controllers do, and says
// what held: an informer that fills its cache by WatchList (client-go's default since
// 1.35) and follows changes, the typed client's errors, the dynamic client, and server-side
// apply with conflicts, force and extraction. Each step prints "ok STEP" or
// "FAIL STEP: WHY" (then the command exits 1). apfkit-differential runs it against the
// reference kube-apiserver and against apfkit's server; both must pass every step.
//
//	apfkit-client-go --kubeconfig FILE [--context NAME]
package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	flowcontrolv1ac "k8s.io/client-go/applyconfigurations/flowcontrol/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	flowcontrolclient "k8s.io/client-go/kubernetes/typed/flowcontrol/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"apfkit/reference/clients/step"
)

// The label every object of a run carries; the informer selects on it.
const label = "apfkit.example.com/client-go"

// requests records the URLs of the requests sent for PriorityLevelConfigurations.
type requests struct {
	mu   sync.Mutex
	urls []string
	next http.RoundTripper
}

func (r *requests) RoundTrip(request *http.Request) (*http.Response, error) {
	if strings.Contains(request.URL.Path, "prioritylevelconfigurations") {
		r.mu.Lock()
		r.urls = append(r.urls, request.Method+" "+request.URL.RequestURI())
		r.mu.Unlock()
	}
	return r.next.RoundTrip(request)
}

func (r *requests) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.urls)
}

func main() {
	config := step.Config("apfkit-client-go --kubeconfig FILE [--context NAME]")
	config.QPS, config.Burst = 100, 200
	recorded := &requests{}
	config.Wrap(func(next http.RoundTripper) http.RoundTripper {
		recorded.next = next
		return recorded
	})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	clients := kubernetes.NewForConfigOrDie(config)
	levels := clients.FlowcontrolV1().PriorityLevelConfigurations()

	step.Run("an informer fills its cache by WatchList and follows changes", func() error {
		return informer(ctx, clients, recorded)
	})
	step.Run("the typed client's errors are kube's", func() error {
		return typedErrors(ctx, levels)
	})
	step.Run("the dynamic client creates, reads, lists, patches and deletes", func() error {
		return dynamicClient(ctx, config)
	})
	step.Run("server-side apply: conflicts, force, extraction", func() error {
		return serverSideApply(ctx, levels)
	})
}

// level is a PriorityLevelConfiguration of this run: no controller writes its status on
// either server.
func level(name string, shares int32) *flowcontrolv1.PriorityLevelConfiguration {
	return &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{label: "yes"}},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
				NominalConcurrencyShares: &shares,
				LimitResponse: flowcontrolv1.LimitResponse{
					Type: flowcontrolv1.LimitResponseTypeReject,
				},
			},
		},
	}
}

// eventually polls until check holds, for 20 s at most.
func eventually(ctx context.Context, what string, check func() bool) error {
	deadline := time.Now().Add(20 * time.Second)
	for !check() {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%s: not within 20 s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

func informer(ctx context.Context, clients *kubernetes.Clientset, recorded *requests) error {
	levels := clients.FlowcontrolV1().PriorityLevelConfigurations()
	for _, name := range []string{"informed-a", "informed-b"} {
		if _, err := levels.Create(ctx, level(name, 5), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create %s: %w", name, err)
		}
	}
	factory := informers.NewSharedInformerFactoryWithOptions(clients, 0,
		informers.WithTweakListOptions(func(options *metav1.ListOptions) {
			options.LabelSelector = label + "=yes"
		}))
	shared := factory.Flowcontrol().V1().PriorityLevelConfigurations()
	var mu sync.Mutex
	var events []string
	record := func(event string) {
		mu.Lock()
		events = append(events, event)
		mu.Unlock()
	}
	_, err := shared.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(object any) {
			record("add " + object.(*flowcontrolv1.PriorityLevelConfiguration).Name)
		},
		UpdateFunc: func(_, object any) {
			record("update " + object.(*flowcontrolv1.PriorityLevelConfiguration).Name)
		},
		DeleteFunc: func(object any) {
			if tombstone, ok := object.(cache.DeletedFinalStateUnknown); ok {
				object = tombstone.Obj
			}
			record("delete " + object.(*flowcontrolv1.PriorityLevelConfiguration).Name)
		},
	})
	if err != nil {
		return err
	}
	stop := make(chan struct{})
	defer close(stop)
	factory.Start(stop)
	synced := make(chan bool, 1)
	go func() { synced <- cache.WaitForCacheSync(ctx.Done(), shared.Informer().HasSynced) }()
	select {
	case ok := <-synced:
		if !ok {
			return fmt.Errorf("the cache did not sync; requests: %v", recorded.seen())
		}
	case <-time.After(30 * time.Second):
		return fmt.Errorf("the cache did not sync within 30 s; requests: %v", recorded.seen())
	}
	cached, err := shared.Lister().List(labels.Everything())
	if err != nil {
		return err
	}
	if len(cached) != 2 {
		return fmt.Errorf("the synced cache holds %d objects, not 2", len(cached))
	}
	// The cache was filled by a watch that sent the objects first, never by a list.
	var watchList bool
	for _, url := range recorded.seen() {
		if strings.Contains(url, "sendInitialEvents=true") && strings.Contains(url, "watch=true") {
			watchList = true
		}
		if strings.HasPrefix(url, "GET ") && !strings.Contains(url, "watch=true") {
			return fmt.Errorf("the informer listed (%s): WatchList was not used; requests: %v", url, recorded.seen())
		}
	}
	if !watchList {
		return fmt.Errorf("no WatchList request among %v", recorded.seen())
	}

	if _, err := levels.Create(ctx, level("informed-c", 5), metav1.CreateOptions{}); err != nil {
		return err
	}
	patch := []byte(`{"spec":{"limited":{"nominalConcurrencyShares":7}}}`)
	if _, err := levels.Patch(ctx, "informed-a", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return err
	}
	if err := levels.Delete(ctx, "informed-b", metav1.DeleteOptions{}); err != nil {
		return err
	}
	want := []string{"add " + "informed-a", "add " + "informed-b", "add " + "informed-c",
		"update " + "informed-a", "delete " + "informed-b"}
	err = eventually(ctx, "the informer's events", func() bool {
		mu.Lock()
		defer mu.Unlock()
		sorted := slices.Clone(events)
		// The initial adds come in the server's order; the rest in the order made.
		if len(sorted) >= 2 {
			slices.Sort(sorted[:2])
		}
		return slices.Equal(sorted, want)
	})
	if err != nil {
		mu.Lock()
		defer mu.Unlock()
		return fmt.Errorf("%w: saw %v", err, events)
	}
	updated, err := shared.Lister().Get("informed-a")
	if err != nil {
		return err
	}
	if *updated.Spec.Limited.NominalConcurrencyShares != 7 {
		return fmt.Errorf("the cached informed-a has shares %d, not 7", *updated.Spec.Limited.NominalConcurrencyShares)
	}
	return nil
}

func typedErrors(ctx context.Context, levels flowcontrolclient.PriorityLevelConfigurationInterface) error {
	if _, err := levels.Get(ctx, "never-made", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		return fmt.Errorf("get of a missing object: %v, not NotFound", err)
	}
	created, err := levels.Create(ctx, level("typed", 5), metav1.CreateOptions{})
	if err != nil {
		return err
	}
	if _, err := levels.Create(ctx, level("typed", 5), metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("a second create: %v, not AlreadyExists", err)
	}
	fresh := created.DeepCopy()
	*fresh.Spec.Limited.NominalConcurrencyShares = 9
	if _, err := levels.Update(ctx, fresh, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("an update: %w", err)
	}
	stale := created.DeepCopy()
	*stale.Spec.Limited.NominalConcurrencyShares = 11
	if _, err := levels.Update(ctx, stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		return fmt.Errorf("an update of a stale copy: %v, not Conflict", err)
	}
	invalid := level("invalid", -1)
	_, err = levels.Create(ctx, invalid, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) {
		return fmt.Errorf("negative shares: %v, not Invalid", err)
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil || len(status.Status().Details.Causes) == 0 {
		return fmt.Errorf("negative shares: no causes in %v", err)
	}
	if field := status.Status().Details.Causes[0].Field; field != "spec.limited.nominalConcurrencyShares" {
		return fmt.Errorf("negative shares: the cause names %q", field)
	}
	return nil
}

func dynamicClient(ctx context.Context, config *rest.Config) error {
	client, err := dynamic.NewForConfig(config)
	if err != nil {
		return err
	}
	services := client.Resource(schema.GroupVersionResource{Version: "v1", Resource: "services"}).Namespace("default")
	service := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "Service",
		"metadata":   map[string]any{"name": "dynamic", "labels": map[string]any{label: "yes"}},
		"spec": map[string]any{
			"clusterIP": "None",
			"selector":  map[string]any{"app": "dynamic"},
			"ports":     []any{map[string]any{"name": "http", "port": int64(80)}},
		},
	}}
	if _, err := services.Create(ctx, service, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create: %w", err)
	}
	got, err := services.Get(ctx, "dynamic", metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get: %w", err)
	}
	if policy, _, _ := unstructured.NestedString(got.Object, "spec", "ipFamilyPolicy"); policy != "SingleStack" {
		return fmt.Errorf("the Service read back has ipFamilyPolicy %q", policy)
	}
	list, err := services.List(ctx, metav1.ListOptions{LabelSelector: label + "=yes"})
	if err != nil {
		return fmt.Errorf("list: %w", err)
	}
	if len(list.Items) != 1 || list.GetResourceVersion() == "" {
		return fmt.Errorf("list: %d items, resourceVersion %q", len(list.Items), list.GetResourceVersion())
	}
	patch := []byte(`{"spec":{"ports":[{"name":"https","port":443}]}}`)
	patched, err := services.Patch(ctx, "dynamic", types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("strategic merge patch: %w", err)
	}
	ports, _, _ := unstructured.NestedSlice(patched.Object, "spec", "ports")
	if len(ports) != 2 {
		return fmt.Errorf("strategic merge patch: %d ports, not 2", len(ports))
	}
	if err := services.Delete(ctx, "dynamic", metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	if _, err := services.Get(ctx, "dynamic", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		return fmt.Errorf("get after delete: %v, not NotFound", err)
	}
	return nil
}

func serverSideApply(ctx context.Context, levels flowcontrolclient.PriorityLevelConfigurationInterface) error {
	applied := func(shares int32) *flowcontrolv1ac.PriorityLevelConfigurationApplyConfiguration {
		return flowcontrolv1ac.PriorityLevelConfiguration("applied").
			WithLabels(map[string]string{label: "yes"}).
			WithSpec(flowcontrolv1ac.PriorityLevelConfigurationSpec().
				WithType(flowcontrolv1.PriorityLevelEnablementLimited).
				WithLimited(flowcontrolv1ac.LimitedPriorityLevelConfiguration().
					WithNominalConcurrencyShares(shares).
					WithLimitResponse(flowcontrolv1ac.LimitResponse().
						WithType(flowcontrolv1.LimitResponseTypeReject))))
	}
	first, err := levels.Apply(ctx, applied(5), metav1.ApplyOptions{FieldManager: "first"})
	if err != nil {
		return fmt.Errorf("first apply: %w", err)
	}
	if len(first.ManagedFields) != 1 || first.ManagedFields[0].Manager != "first" ||
		first.ManagedFields[0].Operation != metav1.ManagedFieldsOperationApply {
		return fmt.Errorf("managed fields after the first apply: %+v", first.ManagedFields)
	}
	_, err = levels.Apply(ctx, applied(6), metav1.ApplyOptions{FieldManager: "second"})
	if !apierrors.IsConflict(err) {
		return fmt.Errorf("a second manager's apply of another value: %v, not Conflict", err)
	}
	if !strings.Contains(err.Error(), `conflict with "first"`) ||
		!strings.Contains(err.Error(), ".spec.limited.nominalConcurrencyShares") {
		return fmt.Errorf("the conflict does not name the manager and field: %v", err)
	}
	forced, err := levels.Apply(ctx, applied(6), metav1.ApplyOptions{FieldManager: "second", Force: true})
	if err != nil {
		return fmt.Errorf("forced apply: %w", err)
	}
	if *forced.Spec.Limited.NominalConcurrencyShares != 6 {
		return fmt.Errorf("forced apply: shares %d", *forced.Spec.Limited.NominalConcurrencyShares)
	}
	extracted, err := flowcontrolv1ac.ExtractPriorityLevelConfiguration(forced, "first")
	if err != nil {
		return fmt.Errorf("extract: %w", err)
	}
	if extracted.Spec == nil || extracted.Spec.Limited == nil ||
		extracted.Spec.Limited.NominalConcurrencyShares != nil {
		return fmt.Errorf("first still owns the shares after the forced apply: %+v", extracted.Spec)
	}
	return nil
}
