// Command apfkit-controller-runtime runs a controller-runtime 0.25 manager against a server as
// an operator does, and says what held: a two-version CRD converted by the manager's own
// conversion webhook (controller-runtime's hub and spokes), and a reconciler that puts a
// finalizer on each object, writes its status, and lets a deleted object go once it has
// cleaned up. Each step prints "ok STEP" or "FAIL STEP: WHY" (then the command exits 1).
// apfkit-differential runs it against the reference kube-apiserver and against apfkit's
// server; both must pass every step.
//
//	apfkit-controller-runtime --kubeconfig FILE [--context NAME]
package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/conversion"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"apfkit/reference/clients/step"
)

const (
	group     = "crtest.example.com"
	finalizer = "crtest.example.com/cleanup"
)

var (
	v1 = schema.GroupVersion{Group: group, Version: "v1"}
	v2 = schema.GroupVersion{Group: group, Version: "v2"}
)

// WidgetV1 is the storage version and the hub: `spec.colour` and `spec.size`.
type WidgetV1 struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              WidgetV1Spec `json:"spec,omitempty"`
	Status            WidgetStatus `json:"status,omitempty"`
}

type WidgetV1Spec struct {
	Colour string `json:"colour,omitempty"`
	Size   int64  `json:"size,omitempty"`
}

// WidgetV2 spells it `spec.color` and nests the size: `spec.dimensions.size`.
type WidgetV2 struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              WidgetV2Spec `json:"spec,omitempty"`
	Status            WidgetStatus `json:"status,omitempty"`
}

type WidgetV2Spec struct {
	Color      string     `json:"color,omitempty"`
	Dimensions Dimensions `json:"dimensions,omitempty"`
}

type Dimensions struct {
	Size int64 `json:"size,omitempty"`
}

// WidgetStatus is what the reconciler saw.
type WidgetStatus struct {
	ObservedColour string `json:"observedColour,omitempty"`
}

type WidgetV1List struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WidgetV1 `json:"items"`
}

type WidgetV2List struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WidgetV2 `json:"items"`
}

func (in *WidgetV1) DeepCopyObject() runtime.Object {
	out := *in
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

func (in *WidgetV2) DeepCopyObject() runtime.Object {
	out := *in
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

func (in *WidgetV1List) DeepCopyObject() runtime.Object {
	out := *in
	out.Items = make([]WidgetV1, len(in.Items))
	for i := range in.Items {
		out.Items[i] = *in.Items[i].DeepCopyObject().(*WidgetV1)
	}
	return &out
}

func (in *WidgetV2List) DeepCopyObject() runtime.Object {
	out := *in
	out.Items = make([]WidgetV2, len(in.Items))
	for i := range in.Items {
		out.Items[i] = *in.Items[i].DeepCopyObject().(*WidgetV2)
	}
	return &out
}

// Hub marks v1 as the hub of controller-runtime's conversion.
func (*WidgetV1) Hub() {}

func (in *WidgetV2) ConvertTo(hub conversion.Hub) error {
	out := hub.(*WidgetV1)
	out.ObjectMeta = in.ObjectMeta
	out.Spec = WidgetV1Spec{Colour: in.Spec.Color, Size: in.Spec.Dimensions.Size}
	out.Status = in.Status
	return nil
}

func (in *WidgetV2) ConvertFrom(hub conversion.Hub) error {
	from := hub.(*WidgetV1)
	in.ObjectMeta = from.ObjectMeta
	in.Spec = WidgetV2Spec{Color: from.Spec.Colour, Dimensions: Dimensions{Size: from.Spec.Size}}
	in.Status = from.Status
	return nil
}

func main() {
	log.SetLogger(zap.New(zap.WriteTo(os.Stderr)))
	config := step.Config("apfkit-controller-runtime --kubeconfig FILE [--context NAME]")
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Second)
	defer cancel()

	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{apiextensionsv1.AddToScheme, addWidgets} {
		if err := add(scheme); err != nil {
			step.Fail("scheme", err)
		}
	}
	certificates, err := os.MkdirTemp("", "apfkit-controller-runtime-")
	if err != nil {
		step.Fail("a temporary folder", err)
	}
	defer os.RemoveAll(certificates)
	step.OnFail(func() { os.RemoveAll(certificates) })
	caBundle, err := writeServingCertificate(certificates)
	if err != nil {
		step.Fail("certificates", err)
	}
	port, err := freePort()
	if err != nil {
		step.Fail("a free port", err)
	}
	c, err := client.New(config, client.Options{Scheme: scheme})
	if err != nil {
		step.Fail("client", err)
	}

	step.Run("a two-version CRD with a conversion webhook is established", func() error {
		return establish(ctx, c, port, caBundle)
	})

	manager, err := ctrl.NewManager(config, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer: webhook.NewServer(webhook.Options{
			Host: "127.0.0.1", Port: port, CertDir: certificates,
		}),
	})
	if err != nil {
		step.Fail("manager", err)
	}
	if err := builder.WebhookManagedBy(manager, &WidgetV2{}).Complete(); err != nil {
		step.Fail("the conversion webhook", err)
	}
	reconciler := &reconciler{client: manager.GetClient(), deleting: map[string]bool{}}
	if err := ctrl.NewControllerManagedBy(manager).For(&WidgetV1{}).Complete(reconciler); err != nil {
		step.Fail("the controller", err)
	}
	managerCtx, stopManager := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- manager.Start(managerCtx) }()
	defer func() {
		stopManager()
		<-stopped
	}()
	if err := waitForTLS(ctx, port); err != nil {
		step.Fail("the webhook server", err)
	}

	step.Run("a widget created as v2 reads as v1 and back through the webhook", func() error {
		created := &WidgetV2{
			ObjectMeta: metav1.ObjectMeta{Name: "blue", Namespace: "default"},
			Spec:       WidgetV2Spec{Color: "blue", Dimensions: Dimensions{Size: 3}},
		}
		if err := c.Create(ctx, created); err != nil {
			return fmt.Errorf("create as v2: %w", err)
		}
		var stored WidgetV1
		if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "blue"}, &stored); err != nil {
			return fmt.Errorf("get as v1: %w", err)
		}
		if stored.Spec.Colour != "blue" || stored.Spec.Size != 3 {
			return fmt.Errorf("as v1: %+v", stored.Spec)
		}
		var again WidgetV2
		if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "blue"}, &again); err != nil {
			return fmt.Errorf("get as v2: %w", err)
		}
		if again.Spec != created.Spec {
			return fmt.Errorf("as v2: %+v", again.Spec)
		}
		return nil
	})
	step.Run("the reconciler puts its finalizer on the widget and writes its status", func() error {
		return eventually(ctx, "the finalizer and the status", func() (bool, error) {
			var widget WidgetV1
			if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "blue"}, &widget); err != nil {
				return false, err
			}
			return controllerutil.ContainsFinalizer(&widget, finalizer) &&
				widget.Status.ObservedColour == "blue", nil
		})
	})
	step.Run("a list as v2 converts every item", func() error {
		second := &WidgetV1{
			ObjectMeta: metav1.ObjectMeta{Name: "green", Namespace: "default"},
			Spec:       WidgetV1Spec{Colour: "green", Size: 5},
		}
		if err := c.Create(ctx, second); err != nil {
			return fmt.Errorf("create as v1: %w", err)
		}
		var list WidgetV2List
		if err := c.List(ctx, &list, client.InNamespace("default")); err != nil {
			return err
		}
		colors := map[string]int64{}
		for _, item := range list.Items {
			colors[item.Spec.Color] = item.Spec.Dimensions.Size
		}
		if len(list.Items) != 2 || colors["blue"] != 3 || colors["green"] != 5 {
			return fmt.Errorf("listed as v2: %+v", list.Items)
		}
		return nil
	})
	step.Run("a deleted widget stays until the reconciler removes its finalizer", func() error {
		widget := &WidgetV2{ObjectMeta: metav1.ObjectMeta{Name: "blue", Namespace: "default"}}
		if err := c.Delete(ctx, widget); err != nil {
			return fmt.Errorf("delete: %w", err)
		}
		err := eventually(ctx, "the widget gone", func() (bool, error) {
			var gone WidgetV1
			err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "blue"}, &gone)
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			return false, err
		})
		if err != nil {
			return err
		}
		if !reconciler.sawDeleting("blue") {
			return errors.New("the reconciler never saw the widget marked for deletion")
		}
		return nil
	})
}

func addWidgets(scheme *runtime.Scheme) error {
	scheme.AddKnownTypeWithName(v1.WithKind("Widget"), &WidgetV1{})
	scheme.AddKnownTypeWithName(v1.WithKind("WidgetList"), &WidgetV1List{})
	scheme.AddKnownTypeWithName(v2.WithKind("Widget"), &WidgetV2{})
	scheme.AddKnownTypeWithName(v2.WithKind("WidgetList"), &WidgetV2List{})
	metav1.AddToGroupVersion(scheme, v1)
	metav1.AddToGroupVersion(scheme, v2)
	return nil
}

// reconciler keeps a finalizer on every widget, writes what it saw to status, and removes the
// finalizer of a widget being deleted.
type reconciler struct {
	client   client.Client
	mu       sync.Mutex
	deleting map[string]bool
}

func (r *reconciler) sawDeleting(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.deleting[name]
}

func (r *reconciler) Reconcile(ctx context.Context, request ctrl.Request) (ctrl.Result, error) {
	var widget WidgetV1
	if err := r.client.Get(ctx, request.NamespacedName, &widget); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !widget.DeletionTimestamp.IsZero() {
		r.mu.Lock()
		r.deleting[widget.Name] = true
		r.mu.Unlock()
		if controllerutil.RemoveFinalizer(&widget, finalizer) {
			return ctrl.Result{}, r.client.Update(ctx, &widget)
		}
		return ctrl.Result{}, nil
	}
	if controllerutil.AddFinalizer(&widget, finalizer) {
		return ctrl.Result{}, r.client.Update(ctx, &widget)
	}
	if widget.Status.ObservedColour != widget.Spec.Colour {
		widget.Status.ObservedColour = widget.Spec.Colour
		return ctrl.Result{}, r.client.Status().Update(ctx, &widget)
	}
	return ctrl.Result{}, nil
}

// establish creates the CRD, its conversion sent to the manager's webhook, and waits until
// it is established.
func establish(ctx context.Context, c client.Client, port int, caBundle []byte) error {
	url := fmt.Sprintf("https://127.0.0.1:%d/convert", port)
	schemaOf := func(spec map[string]apiextensionsv1.JSONSchemaProps) *apiextensionsv1.CustomResourceValidation {
		return &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
			Type: "object",
			Properties: map[string]apiextensionsv1.JSONSchemaProps{
				"spec": {Type: "object", Properties: spec},
				"status": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
					"observedColour": {Type: "string"},
				}},
			},
		}}
	}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList",
			},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{
					Name: "v1", Served: true, Storage: true,
					Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
					Schema: schemaOf(map[string]apiextensionsv1.JSONSchemaProps{
						"colour": {Type: "string"}, "size": {Type: "integer"},
					}),
				},
				{
					Name: "v2", Served: true,
					Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
					Schema: schemaOf(map[string]apiextensionsv1.JSONSchemaProps{
						"color": {Type: "string"},
						"dimensions": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"size": {Type: "integer"},
						}},
					}),
				},
			},
			Conversion: &apiextensionsv1.CustomResourceConversion{
				Strategy: apiextensionsv1.WebhookConverter,
				Webhook: &apiextensionsv1.WebhookConversion{
					ClientConfig:             &apiextensionsv1.WebhookClientConfig{URL: &url, CABundle: caBundle},
					ConversionReviewVersions: []string{"v1"},
				},
			},
		},
	}
	if err := c.Create(ctx, crd); err != nil {
		return fmt.Errorf("create: %w", err)
	}
	return eventually(ctx, "the CRD established", func() (bool, error) {
		var got apiextensionsv1.CustomResourceDefinition
		if err := c.Get(ctx, client.ObjectKey{Name: crd.Name}, &got); err != nil {
			return false, err
		}
		for _, condition := range got.Status.Conditions {
			if condition.Type == apiextensionsv1.Established && condition.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
}

// eventually polls check until it holds, for 30 s at most.
func eventually(ctx context.Context, what string, check func() (bool, error)) error {
	deadline := time.Now().Add(30 * time.Second)
	var last error
	for {
		done, err := check()
		if done {
			return nil
		}
		last = err
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%s: not within 30 s (last error: %v)", what, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// writeServingCertificate writes tls.crt and tls.key for 127.0.0.1, signed by a CA made here,
// into dir and answers the CA's certificate (PEM), the CRD's caBundle.
func writeServingCertificate(dir string) ([]byte, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTemplate := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "apfkit-controller-runtime CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	template := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, template, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	write := func(name, kind string, bytes []byte) error {
		return os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: bytes}), 0o600)
	}
	if err := write("tls.crt", "CERTIFICATE", der); err != nil {
		return nil, err
	}
	if err := write("tls.key", "EC PRIVATE KEY", keyDER); err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), nil
}

func freePort() (int, error) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer listener.Close()
	return listener.Addr().(*net.TCPAddr).Port, nil
}

// waitForTLS waits until the webhook server completes TLS handshakes.
func waitForTLS(ctx context.Context, port int) error {
	return eventually(ctx, "the webhook server's TLS", func() (bool, error) {
		connection, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // only whether it answers
		if err != nil {
			return false, err
		}
		connection.Close()
		return true, nil
	})
}
