#!/usr/bin/python3
"""A kubelet stand-in for the VM tests: the CRI calls kubelet makes for one pod, over containerd's
socket, with the CRI v1 bindings generated when the guest root was built (/opt/nfs-gds-vm/cri).

  cri-client.py run [options] -- CMD...   one pod (host network, empty hostname), one container
                                          running CMD; prints the container's log, exits with its
                                          exit code
  cri-client.py bench --count N [options]       one pod, N containers created and removed in turn
                                          (never started); prints each CreateContainer's time

Options: --name NAME, --annotation K=V (pod), --bind HOST:CTR[:ro], --device HOST:CTR,
--privileged, --image REF, --socket PATH, --timeout S.

When a CRI call fails it prints `CRI <Call> failed: <gRPC code>: <the runtime's error text>` on
stderr (what kubelet puts in the pod's events) and exits 3 (RunPodSandbox), 4 (CreateContainer),
5 (StartContainer) or 6 (the container did not exit in time). The pod is always stopped and
removed. `create-ms: N` on stderr is how long CreateContainer took.
"""
import argparse
import os
import statistics
import sys
import time
import uuid

sys.path.insert(0, "/opt/nfs-gds-vm/cri")
import grpc  # noqa: E402
import api_pb2 as pb  # noqa: E402
import api_pb2_grpc as pbg  # noqa: E402


class CriFailed(Exception):
    def __init__(self, call, err, code):
        super().__init__(f"CRI {call} failed: {err.code().name}: {err.details()}")
        self.exit_code = code


def call(what, code, fn, req, timeout):
    try:
        return fn(req, timeout=timeout)
    except grpc.RpcError as err:
        raise CriFailed(what, err, code) from None


def pod_config(args, uid):
    ns = pb.NamespaceOption(network=pb.NODE)
    return pb.PodSandboxConfig(
        metadata=pb.PodSandboxMetadata(name=args.name, uid=uid, namespace="default", attempt=0),
        # Empty: a host-network sandbox has no UTS namespace of its own to set a name in.
        hostname="",
        log_directory=f"/var/log/pods/default_{args.name}_{uid}",
        annotations=dict(a.split("=", 1) for a in args.annotation),
        labels={"io.kubernetes.pod.name": args.name},
        linux=pb.LinuxPodSandboxConfig(
            security_context=pb.LinuxSandboxSecurityContext(namespace_options=ns, privileged=args.privileged)
        ),
    )


def container_config(args, name, command):
    mounts = []
    for b in args.bind:
        parts = b.split(":")
        mounts.append(pb.Mount(host_path=parts[0], container_path=parts[1], readonly=parts[2:] == ["ro"]))
    devices = []
    for d in args.device:
        host, ctr = d.split(":", 1)
        devices.append(pb.Device(host_path=host, container_path=ctr, permissions="rw"))
    return pb.ContainerConfig(
        metadata=pb.ContainerMetadata(name=name, attempt=0),
        image=pb.ImageSpec(image=args.image),
        command=command,
        mounts=mounts,
        devices=devices,
        log_path=f"{name}.log",
        linux=pb.LinuxContainerConfig(
            security_context=pb.LinuxContainerSecurityContext(
                privileged=args.privileged, namespace_options=pb.NamespaceOption(network=pb.NODE)
            )
        ),
    )


def read_log(path):
    """The container's output from its CRI log (`TIME STREAM TAG TEXT` lines)."""
    out = []
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                parts = line.rstrip("\n").split(" ", 3)
                out.append(parts[3] if len(parts) == 4 else line.rstrip("\n"))
    except OSError as err:
        out.append(f"(no container log: {err})")
    return out


def run(rt, args, pod_id, cfg):
    t0 = time.monotonic()
    cid = call(
        "CreateContainer", 4, rt.CreateContainer,
        pb.CreateContainerRequest(pod_sandbox_id=pod_id, config=container_config(args, "c", args.command), sandbox_config=cfg),
        args.timeout,
    ).container_id
    print(f"create-ms: {(time.monotonic() - t0) * 1000:.1f}", file=sys.stderr)
    call("StartContainer", 5, rt.StartContainer, pb.StartContainerRequest(container_id=cid), args.timeout)
    deadline = time.monotonic() + args.timeout
    while True:
        st = call("ContainerStatus", 6, rt.ContainerStatus, pb.ContainerStatusRequest(container_id=cid), args.timeout).status
        if st.state == pb.CONTAINER_EXITED:
            break
        if time.monotonic() > deadline:
            print(f"the container did not exit within {args.timeout} s", file=sys.stderr)
            return 6
        time.sleep(0.2)
    for line in read_log(st.log_path):
        print(line)
    return st.exit_code


def bench(rt, args, pod_id, cfg):
    times = []
    for i in range(args.count):
        t0 = time.monotonic()
        cid = call(
            "CreateContainer", 4, rt.CreateContainer,
            pb.CreateContainerRequest(pod_sandbox_id=pod_id, config=container_config(args, f"b{i}", ["true"]), sandbox_config=cfg),
            args.timeout,
        ).container_id
        times.append((time.monotonic() - t0) * 1000)
        call("RemoveContainer", 4, rt.RemoveContainer, pb.RemoveContainerRequest(container_id=cid), args.timeout)
    print("create-ms: " + " ".join(f"{t:.1f}" for t in times))
    print(f"median-ms: {statistics.median(times):.1f}")
    return 0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["run", "bench"])
    p.add_argument("--count", type=int, default=10)
    p.add_argument("--name", default="pod")
    p.add_argument("--annotation", action="append", default=[])
    p.add_argument("--bind", action="append", default=[])
    p.add_argument("--device", action="append", default=[])
    p.add_argument("--privileged", action="store_true")
    p.add_argument("--image", default="localhost/bb:1")
    p.add_argument("--socket", default="/run/containerd/containerd.sock")
    p.add_argument("--timeout", type=float, default=60)
    # Everything after "--" is the container's command (argparse's nargs="*" would not take it
    # after the options).
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    args = p.parse_args(argv[:cut])
    args.command = argv[cut + 1:]
    rt = pbg.RuntimeServiceStub(grpc.insecure_channel("unix://" + args.socket))
    uid = str(uuid.uuid4())
    cfg = pod_config(args, uid)
    os.makedirs(cfg.log_directory, exist_ok=True)
    pod_id = None
    try:
        pod_id = call("RunPodSandbox", 3, rt.RunPodSandbox, pb.RunPodSandboxRequest(config=cfg), args.timeout).pod_sandbox_id
        return (bench if args.mode == "bench" else run)(rt, args, pod_id, cfg)
    except CriFailed as err:
        print(err, file=sys.stderr)
        return err.exit_code
    finally:
        if pod_id:
            for what, fn, req in (
                ("StopPodSandbox", rt.StopPodSandbox, pb.StopPodSandboxRequest(pod_sandbox_id=pod_id)),
                ("RemovePodSandbox", rt.RemovePodSandbox, pb.RemovePodSandboxRequest(pod_sandbox_id=pod_id)),
            ):
                try:
                    fn(req, timeout=args.timeout)
                except grpc.RpcError as err:
                    print(f"CRI {what} failed: {err.code().name}: {err.details()}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
