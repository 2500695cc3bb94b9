// Command stubkubelet is a stand-in kubelet for landlord's end-to-end tests: it lets the real
// kube-apiserver of tests/cluster exec, attach, port-forward and read logs in pods, on a machine
// with no container runtime and no real kubelet.
//
// It registers a Node (status.addresses = [InternalIP 127.0.0.1], the kubelet port in
// status.daemonEndpoints, Ready=True) and keeps it fresh (a Lease in kube-node-lease and the
// Ready condition's heartbeat), marks the pods bound to that Node by spec.nodeName Running (as
// a kubelet does once their containers start), finishes their graceful deletion (as a kubelet
// does once their containers stop), and serves over HTTPS on 127.0.0.1 the endpoints the API
// server proxies to:
//
//	/exec/{ns}/{pod}/{container}         /exec/{ns}/{pod}/{uid}/{container}
//	/attach/{ns}/{pod}/{container}       /attach/{ns}/{pod}/{uid}/{container}
//	/portForward/{ns}/{pod}              /portForward/{ns}/{pod}/{uid}
//	/containerLogs/{ns}/{pod}/{container}  (follow, tailLines, timestamps)
//	/healthz
//
// Exec, attach and port-forward are served by k8s.io/kubelet/pkg/cri/streaming, the streaming
// server a CRI runtime embeds, so SPDY and WebSocket (v4/v5.channel.k8s.io, portforward) work as
// with a real kubelet. The "container runtime" behind it is fake and runs nothing on the host:
//
//	exec echo ARGS...           prints ARGS (joined by spaces) and a newline on stdout
//	exec cat                    copies stdin to stdout until stdin closes
//	exec sh -c 'exit N'         exits with status N (also /bin/sh)
//	exec env                    prints POD_NAMESPACE, POD_NAME, CONTAINER_NAME and HOSTNAME lines
//	exec stderr ARGS...         prints ARGS and a newline on stderr
//	exec anything else          prints "stub: <command line>" on stdout, exits 0
//	attach                      prints "stub attach: <ns>/<pod>/<container>" on stdout, then
//	                            copies stdin to stdout until stdin closes (without stdin it ends
//	                            after the greeting, as if the container had exited)
//	port-forward to port P      echoes the bytes it receives; but when the pod has the annotation
//	                            stubkubelet.landlord.dev/port-P: "L", it connects to 127.0.0.1:L
//	                            instead (only ever 127.0.0.1)
//	logs                        three lines "stub log line N of <ns>/<pod>/<container>"; with
//	                            follow=true one more line a second until the client goes away
//
// It logs "stubkubelet: ready node=NAME port=PORT" on stderr once the Node is registered and its
// pod watch has synced. SIGTERM or SIGINT stops it; the Node is left for the caller to delete.
package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/remotecommand"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/kubelet/pkg/cri/streaming"
	"k8s.io/kubelet/pkg/cri/streaming/portforward"
	remotecommandserver "k8s.io/kubelet/pkg/cri/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"
	"k8s.io/utils/ptr"
)

// version is the Kubernetes version the Node reports as its kubelet's (set with -ldflags -X).
var version = "v0.0.0-dev"

// PortAnnotationPrefix + "<pod port>" on a pod names a port on 127.0.0.1 that port-forwards to
// that pod port connect to (instead of the built-in echo).
const PortAnnotationPrefix = "stubkubelet.landlord.dev/port-"

const loopback = "127.0.0.1"

func main() {
	var (
		kubeconfig = flag.String("kubeconfig", "", "kubeconfig of a user that may write nodes, leases and pods (the cluster admin)")
		nodeName   = flag.String("node-name", "stub-node", "name of the Node to register")
		port       = flag.Int("port", 0, "port to serve on at 127.0.0.1 (0: any free port)")
		certFile   = flag.String("tls-cert-file", "", "serving certificate (PEM; default: a self-signed one made at start)")
		keyFile    = flag.String("tls-private-key-file", "", "private key of --tls-cert-file")
		heartbeat  = flag.Duration("heartbeat", 10*time.Second, "how often to renew the node Lease and the Ready condition")
		showVer    = flag.Bool("version", false, "print the version and exit")
	)
	flag.Parse()
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)
	log.SetPrefix("stubkubelet: ")
	if *showVer {
		fmt.Println("stubkubelet", version)
		return
	}
	if *kubeconfig == "" {
		log.Fatal("--kubeconfig is required")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		log.Fatalf("kubeconfig: %v", err)
	}
	cfg.UserAgent = "stubkubelet/" + version
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		log.Fatalf("client: %v", err)
	}
	tlsCfg, err := servingTLS(*certFile, *keyFile)
	if err != nil {
		log.Fatalf("TLS: %v", err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(loopback, strconv.Itoa(*port)))
	if err != nil {
		log.Fatalf("listen: %v", err)
	}
	kubeletPort := ln.Addr().(*net.TCPAddr).Port
	log.Printf("listening on %s", ln.Addr())

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	k := &kubelet{cs: cs, node: *nodeName, port: int32(kubeletPort)}
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", *nodeName).String()
		}))
	podInformer := factory.Core().V1().Pods()
	k.pods = podInformer.Lister()
	if _, err := podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { k.syncPod(ctx, obj) },
		UpdateFunc: func(_, obj any) { k.syncPod(ctx, obj) },
	}); err != nil {
		log.Fatalf("informer: %v", err)
	}

	rt := &fakeRuntime{pods: k.pods}
	k.stream, err = streaming.NewServer(streaming.Config{
		Addr: ln.Addr().String(),
		// The streaming server's own routes live under /cri/; they are reached only from
		// this process (kubelet.dispatch), never from the listener.
		BaseURL:                         &url.URL{Scheme: "https", Host: ln.Addr().String(), Path: "/cri/"},
		StreamIdleTimeout:               5 * time.Minute,
		StreamCreationTimeout:           streaming.DefaultConfig.StreamCreationTimeout,
		SupportedRemoteCommandProtocols: streaming.DefaultConfig.SupportedRemoteCommandProtocols,
		SupportedPortForwardProtocols:   streaming.DefaultConfig.SupportedPortForwardProtocols,
	}, rt)
	if err != nil {
		log.Fatalf("streaming server: %v", err)
	}

	if err := k.registerNode(ctx); err != nil {
		log.Fatalf("registering node %s: %v", k.node, err)
	}
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			log.Fatalf("pod watch of %v did not sync", typ)
		}
	}
	go k.heartbeatLoop(ctx, *heartbeat)

	srv := &http.Server{Handler: k.routes(), TLSConfig: tlsCfg, ReadHeaderTimeout: 30 * time.Second,
		ErrorLog: log.New(os.Stderr, "stubkubelet: http: ", log.LstdFlags)}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
		_ = srv.Close()
	}()
	log.Printf("ready node=%s port=%d", k.node, kubeletPort)
	if err := srv.ServeTLS(ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatalf("serve: %v", err)
	}
	log.Printf("stopped")
}

// servingTLS loads the given certificate, or makes a self-signed one for 127.0.0.1. (The test
// cluster's kube-apiserver has no --kubelet-certificate-authority, so it does not verify the
// kubelet's certificate; tests/e2e/stubkubelet.py still passes one signed by the cluster CA.)
func servingTLS(certFile, keyFile string) (*tls.Config, error) {
	var cert tls.Certificate
	var err error
	if certFile != "" || keyFile != "" {
		cert, err = tls.LoadX509KeyPair(certFile, keyFile)
	} else {
		cert, err = selfSigned()
	}
	if err != nil {
		return nil, err
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12,
		NextProtos: []string{"http/1.1"}}, nil
}

func selfSigned() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: "stubkubelet"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.ParseIP(loopback)},
		DNSNames:     []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

type kubelet struct {
	cs     kubernetes.Interface
	node   string
	port   int32
	pods   listersv1.PodLister
	stream streaming.Server
}

// ---------- the Node and its Lease ----------

func (k *kubelet) nodeObject() *corev1.Node {
	now := metav1.Now()
	res := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("4"),
		corev1.ResourceMemory: resource.MustParse("8Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: k.node,
			Labels: map[string]string{
				"kubernetes.io/hostname":    k.node,
				"kubernetes.io/os":          "linux",
				"kubernetes.io/arch":        "amd64",
				"landlord.dev/stub-kubelet": "true",
				"node.kubernetes.io/exclude-from-external-load-balancers": "true",
			},
		},
		Status: corev1.NodeStatus{
			Capacity:    res,
			Allocatable: res,
			Phase:       corev1.NodeRunning,
			Conditions:  []corev1.NodeCondition{readyCondition(now, now)},
			// Only an InternalIP: the API server's default --kubelet-preferred-address-types
			// tries Hostname first, which would have to resolve.
			Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: loopback}},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: k.port}},
			NodeInfo: corev1.NodeSystemInfo{
				KubeletVersion:          version,
				OperatingSystem:         "linux",
				Architecture:            "amd64",
				ContainerRuntimeVersion: "stub://" + version,
				OSImage:                 "landlord stub kubelet",
			},
		},
	}
}

func readyCondition(heartbeat, transition metav1.Time) corev1.NodeCondition {
	return corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
		LastHeartbeatTime: heartbeat, LastTransitionTime: transition,
		Reason: "KubeletReady", Message: "stub kubelet is posting ready status"}
}

// registerNode creates the Node, or takes over an existing one of that name (a stub run before
// on another port) by writing its status.
func (k *kubelet) registerNode(ctx context.Context) error {
	want := k.nodeObject()
	_, err := k.cs.CoreV1().Nodes().Create(ctx, want, metav1.CreateOptions{})
	if err == nil {
		log.Printf("registered node %s", k.node)
		return k.renewLease(ctx)
	}
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	cur, err := k.cs.CoreV1().Nodes().Get(ctx, k.node, metav1.GetOptions{})
	if err != nil {
		return err
	}
	cur.Status = want.Status
	if _, err := k.cs.CoreV1().Nodes().UpdateStatus(ctx, cur, metav1.UpdateOptions{}); err != nil {
		return err
	}
	log.Printf("took over existing node %s", k.node)
	return k.renewLease(ctx)
}

func (k *kubelet) heartbeatLoop(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := k.renewLease(ctx); err != nil && ctx.Err() == nil {
			log.Printf("lease: %v", err)
		}
		if err := k.heartbeatStatus(ctx); err != nil && ctx.Err() == nil {
			log.Printf("node status: %v", err)
		}
	}
}

func (k *kubelet) heartbeatStatus(ctx context.Context) error {
	node, err := k.cs.CoreV1().Nodes().Get(ctx, k.node, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return k.registerNode(ctx)
	}
	if err != nil {
		return err
	}
	now := metav1.Now()
	found := false
	for i := range node.Status.Conditions {
		c := &node.Status.Conditions[i]
		if c.Type == corev1.NodeReady {
			transition := c.LastTransitionTime
			if c.Status != corev1.ConditionTrue {
				transition = now
			}
			*c = readyCondition(now, transition)
			found = true
		}
	}
	if !found {
		node.Status.Conditions = append(node.Status.Conditions, readyCondition(now, now))
	}
	node.Status.DaemonEndpoints.KubeletEndpoint.Port = k.port
	_, err = k.cs.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
	return err
}

func (k *kubelet) renewLease(ctx context.Context) error {
	leases := k.cs.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	now := metav1.NewMicroTime(time.Now())
	lease, err := leases.Get(ctx, k.node, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		node, err := k.cs.CoreV1().Nodes().Get(ctx, k.node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		lease = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: k.node, Namespace: corev1.NamespaceNodeLease,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node",
					Name: node.Name, UID: node.UID}}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(k.node),
				LeaseDurationSeconds: ptr.To[int32](40), RenewTime: &now},
		}
		_, err = leases.Create(ctx, lease, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	lease.Spec.RenewTime = &now
	_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
	return err
}

// ---------- pods bound to the node ----------

// syncPod does what a kubelet does with the pods bound to it, minus the containers: a new pod
// becomes Running with every container running and ready; a pod being deleted gracefully is
// deleted for good (its "containers" stop at once).
func (k *kubelet) syncPod(ctx context.Context, obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.Spec.NodeName != k.node {
		return
	}
	if pod.DeletionTimestamp != nil {
		err := k.cs.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
			GracePeriodSeconds: ptr.To[int64](0),
			Preconditions:      &metav1.Preconditions{UID: &pod.UID}})
		switch {
		case err == nil:
			log.Printf("pod %s/%s deleted", pod.Namespace, pod.Name)
		case !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) && ctx.Err() == nil:
			log.Printf("deleting pod %s/%s: %v", pod.Namespace, pod.Name, err)
		}
		return
	}
	if pod.Status.Phase == corev1.PodRunning || pod.Status.Phase == corev1.PodSucceeded ||
		pod.Status.Phase == corev1.PodFailed {
		return
	}
	running := pod.DeepCopy()
	markRunning(running)
	if _, err := k.cs.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, running, metav1.UpdateOptions{}); err != nil {
		// A conflict means a newer version is on its way to this handler.
		if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) && ctx.Err() == nil {
			log.Printf("marking pod %s/%s running: %v", pod.Namespace, pod.Name, err)
		}
		return
	}
	log.Printf("pod %s/%s is Running", pod.Namespace, pod.Name)
}

func markRunning(pod *corev1.Pod) {
	now := metav1.Now()
	st := &pod.Status
	st.Phase = corev1.PodRunning
	st.HostIP = loopback
	st.HostIPs = []corev1.HostIP{{IP: loopback}}
	st.PodIP = loopback
	st.PodIPs = []corev1.PodIP{{IP: loopback}}
	st.StartTime = &now
	if st.QOSClass == "" {
		st.QOSClass = corev1.PodQOSBestEffort
	}
	st.Conditions = nil
	for _, t := range []corev1.PodConditionType{corev1.PodReadyToStartContainers, corev1.PodInitialized,
		corev1.ContainersReady, corev1.PodReady, corev1.PodScheduled} {
		st.Conditions = append(st.Conditions, corev1.PodCondition{Type: t, Status: corev1.ConditionTrue,
			LastTransitionTime: now})
	}
	id := func(c string) string { return "stub://" + pod.Namespace + "/" + pod.Name + "/" + c }
	st.InitContainerStatuses = nil
	for _, c := range pod.Spec.InitContainers {
		st.InitContainerStatuses = append(st.InitContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: "stub://" + c.Image, ContainerID: id(c.Name),
			Ready: true, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 0, Reason: "Completed", StartedAt: now, FinishedAt: now}}})
	}
	st.ContainerStatuses = nil
	for _, c := range pod.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: "stub://" + c.Image, ContainerID: id(c.Name),
			Ready: true, Started: ptr.To(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}})
	}
}

// ---------- HTTP endpoints ----------

func (k *kubelet) routes() http.Handler {
	mux := http.NewServeMux()
	for _, m := range []string{"GET", "POST"} {
		mux.HandleFunc(m+" /exec/{ns}/{pod}/{container}", k.serveExec)
		mux.HandleFunc(m+" /exec/{ns}/{pod}/{uid}/{container}", k.serveExec)
		mux.HandleFunc(m+" /attach/{ns}/{pod}/{container}", k.serveAttach)
		mux.HandleFunc(m+" /attach/{ns}/{pod}/{uid}/{container}", k.serveAttach)
		mux.HandleFunc(m+" /portForward/{ns}/{pod}", k.servePortForward)
		mux.HandleFunc(m+" /portForward/{ns}/{pod}/{uid}", k.servePortForward)
	}
	mux.HandleFunc("GET /containerLogs/{ns}/{pod}/{container}", k.serveLogs)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	return logRequests(mux)
}

func logRequests(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log.Printf("%s %s (%s)", r.Method, r.URL.Path, protocolOf(r))
		h.ServeHTTP(w, r)
	})
}

func protocolOf(r *http.Request) string {
	if p := r.Header.Get("Sec-Websocket-Protocol"); p != "" {
		return "websocket: " + p
	}
	if p := r.Header.Values("X-Stream-Protocol-Version"); len(p) > 0 {
		return "spdy: " + strings.Join(p, ",")
	}
	return "plain"
}

// pod finds a pod bound to this node; on failure it has written the error response.
func (k *kubelet) pod(w http.ResponseWriter, r *http.Request, withContainer bool) (*corev1.Pod, string, bool) {
	ns, name := r.PathValue("ns"), r.PathValue("pod")
	pod, err := k.pods.Pods(ns).Get(name)
	if err != nil {
		http.Error(w, fmt.Sprintf("pod %s/%s not found on node %s", ns, name, k.node), http.StatusNotFound)
		return nil, "", false
	}
	if uid := r.PathValue("uid"); uid != "" && uid != string(pod.UID) {
		http.Error(w, fmt.Sprintf("pod %s/%s has another UID", ns, name), http.StatusNotFound)
		return nil, "", false
	}
	if !withContainer {
		return pod, "", true
	}
	c := r.PathValue("container")
	for _, pc := range pod.Spec.Containers {
		if pc.Name == c {
			return pod, c, true
		}
	}
	http.Error(w, fmt.Sprintf("container %s not found in pod %s/%s", c, ns, name), http.StatusNotFound)
	return nil, "", false
}

func containerID(pod *corev1.Pod, container string) string {
	return pod.Namespace + "/" + pod.Name + "/" + container
}

// dispatch hands the request to the streaming server at the URL it gave for it (what a kubelet
// does by proxying to its CRI runtime's streaming server, here within the process).
func (k *kubelet) dispatch(w http.ResponseWriter, r *http.Request, streamURL string, err error) {
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	u, err := url.Parse(streamURL)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	r2 := r.Clone(r.Context())
	r2.URL.Path, r2.URL.RawPath = u.Path, ""
	r2.RequestURI = r2.URL.RequestURI()
	k.stream.ServeHTTP(w, r2)
}

func (k *kubelet) serveExec(w http.ResponseWriter, r *http.Request) {
	pod, c, ok := k.pod(w, r, true)
	if !ok {
		return
	}
	opts, err := remotecommandserver.NewOptions(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	resp, err := k.stream.GetExec(&runtimeapi.ExecRequest{ContainerId: containerID(pod, c),
		Cmd: r.URL.Query()[corev1.ExecCommandParam], Tty: opts.TTY, Stdin: opts.Stdin,
		Stdout: opts.Stdout, Stderr: opts.Stderr})
	k.dispatch(w, r, resp.GetUrl(), err)
}

func (k *kubelet) serveAttach(w http.ResponseWriter, r *http.Request) {
	pod, c, ok := k.pod(w, r, true)
	if !ok {
		return
	}
	opts, err := remotecommandserver.NewOptions(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	resp, err := k.stream.GetAttach(&runtimeapi.AttachRequest{ContainerId: containerID(pod, c),
		Tty: opts.TTY, Stdin: opts.Stdin, Stdout: opts.Stdout, Stderr: opts.Stderr})
	k.dispatch(w, r, resp.GetUrl(), err)
}

func (k *kubelet) servePortForward(w http.ResponseWriter, r *http.Request) {
	pod, _, ok := k.pod(w, r, false)
	if !ok {
		return
	}
	opts, err := portforward.NewV4Options(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	resp, err := k.stream.GetPortForward(&runtimeapi.PortForwardRequest{
		PodSandboxId: pod.Namespace + "/" + pod.Name, Port: opts.Ports})
	k.dispatch(w, r, resp.GetUrl(), err)
}

func (k *kubelet) serveLogs(w http.ResponseWriter, r *http.Request) {
	pod, c, ok := k.pod(w, r, true)
	if !ok {
		return
	}
	q := r.URL.Query()
	if q.Get("previous") == "true" {
		http.Error(w, fmt.Sprintf("previous terminated container %q in pod %q not found", c, pod.Name),
			http.StatusBadRequest)
		return
	}
	follow := q.Get("follow") == "true"
	stamps := q.Get("timestamps") == "true"
	lines := []string{}
	for i := 1; i <= 3; i++ {
		lines = append(lines, fmt.Sprintf("stub log line %d of %s", i, containerID(pod, c)))
	}
	if t := q.Get("tailLines"); t != "" {
		if n, err := strconv.Atoi(t); err == nil && n >= 0 && n < len(lines) {
			lines = lines[len(lines)-n:]
		}
	}
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	write := func(line string) error {
		if stamps {
			line = time.Now().UTC().Format(time.RFC3339Nano) + " " + line
		}
		if _, err := io.WriteString(w, line+"\n"); err != nil {
			return err
		}
		if flusher != nil {
			flusher.Flush()
		}
		return nil
	}
	for _, l := range lines {
		if write(l) != nil {
			return
		}
	}
	if !follow {
		return
	}
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for n := 4; ; n++ {
		select {
		case <-r.Context().Done():
			return
		case <-t.C:
		}
		if write(fmt.Sprintf("stub log line %d of %s", n, containerID(pod, c))) != nil {
			return
		}
	}
}

// ---------- the fake container runtime behind the streaming server ----------

type fakeRuntime struct {
	pods listersv1.PodLister
}

var exitRE = regexp.MustCompile(`^\s*exit\s+([0-9]{1,3})\s*;?\s*$`)

func orDiscard(w io.WriteCloser) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

func drain(resize <-chan remotecommand.TerminalSize) {
	if resize == nil {
		return
	}
	go func() {
		for range resize {
		}
	}()
}

// Exec runs nothing: it fakes a few commands (see the package comment).
func (f *fakeRuntime) Exec(ctx context.Context, containerID string, cmd []string, in io.Reader,
	outW, errW io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize) error {
	drain(resize)
	out, stderr := orDiscard(outW), orDiscard(errW)
	if tty {
		stderr = out
	}
	parts := strings.SplitN(containerID, "/", 3)
	if len(parts) != 3 {
		return fmt.Errorf("bad container id %q", containerID)
	}
	if len(cmd) == 0 {
		return errors.New("no command")
	}
	switch {
	case cmd[0] == "echo":
		_, err := fmt.Fprintln(out, strings.Join(cmd[1:], " "))
		return err
	case cmd[0] == "stderr":
		_, err := fmt.Fprintln(stderr, strings.Join(cmd[1:], " "))
		return err
	case cmd[0] == "cat" && len(cmd) == 1:
		if in == nil {
			return nil
		}
		_, err := io.Copy(out, in)
		return err
	case (cmd[0] == "sh" || cmd[0] == "/bin/sh") && len(cmd) == 3 && cmd[1] == "-c" && exitRE.MatchString(cmd[2]):
		n, _ := strconv.Atoi(exitRE.FindStringSubmatch(cmd[2])[1])
		if n == 0 {
			return nil
		}
		return utilexec.CodeExitError{Err: fmt.Errorf("command terminated with exit code %d", n), Code: n & 0xff}
	case cmd[0] == "env" && len(cmd) == 1:
		_, err := fmt.Fprintf(out, "POD_NAMESPACE=%s\nPOD_NAME=%s\nCONTAINER_NAME=%s\nHOSTNAME=%s\n",
			parts[0], parts[1], parts[2], parts[1])
		return err
	default:
		_, err := fmt.Fprintf(out, "stub: %s\n", strings.Join(cmd, " "))
		return err
	}
}

// Attach prints a greeting, then echoes stdin until it closes.
func (f *fakeRuntime) Attach(ctx context.Context, containerID string, in io.Reader, outW, errW io.WriteCloser,
	tty bool, resize <-chan remotecommand.TerminalSize) error {
	drain(resize)
	out := orDiscard(outW)
	if _, err := fmt.Fprintf(out, "stub attach: %s\n", containerID); err != nil {
		return err
	}
	if in == nil {
		return nil
	}
	_, err := io.Copy(out, in)
	return err
}

// PortForward echoes, or joins the stream to 127.0.0.1:<annotated port>.
func (f *fakeRuntime) PortForward(ctx context.Context, podSandboxID string, port int32, stream io.ReadWriteCloser) error {
	defer stream.Close()
	ns, name, _ := strings.Cut(podSandboxID, "/")
	target := ""
	if pod, err := f.pods.Pods(ns).Get(name); err == nil {
		target = pod.Annotations[PortAnnotationPrefix+strconv.Itoa(int(port))]
	}
	if target == "" {
		_, err := io.Copy(stream, stream)
		return err
	}
	local, err := strconv.ParseUint(target, 10, 16)
	if err != nil || local == 0 {
		return fmt.Errorf("annotation %s%d: %q is not a port", PortAnnotationPrefix, port, target)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(loopback, strconv.FormatUint(local, 10)))
	if err != nil {
		return err
	}
	defer conn.Close()
	done := make(chan struct{}, 2)
	go func() {
		_, _ = io.Copy(conn, stream)
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}()
	go func() {
		_, _ = io.Copy(stream, conn)
		done <- struct{}{}
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
	// When the target closes first, the client still gets everything it sent; when the
	// client closes first, wait (briefly) for the target's answer.
	select {
	case <-done:
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
	}
	return nil
}
