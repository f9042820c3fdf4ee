"""cc_proto: C++ (and optionally gRPC) code from .proto files with Debian's protoc.

Native proto_library needs @com_google_protobuf, which cannot be downloaded here,
so this runs /usr/bin/protoc and /usr/bin/grpc_cpp_plugin in a genrule.

  cc_proto(name = "layout_cc", srcs = ["layout.proto"], deps = ["//proto/etcd:kv_cc"])

Import paths are relative to the workspace root (`import "proto/etcd/kv.proto";`),
and generated headers are included the same way (`#include "proto/layout.pb.h"`).
Each cc_proto also defines `<name>_files`, the transitive .proto inputs.
"""

def _files_label(dep):
    return dep + "_files"

def cc_proto(name, srcs, deps = [], grpc = False, visibility = None, testonly = False):
    native.filegroup(
        name = name + "_files",
        srcs = srcs + [_files_label(d) for d in deps],
        visibility = visibility,
        testonly = testonly,
    )
    pkg = native.package_name()
    outs = []
    for src in srcs:
        base = src[:-len(".proto")]
        outs += [base + ".pb.h", base + ".pb.cc"]
        if grpc:
            outs += [base + ".grpc.pb.h", base + ".grpc.pb.cc"]
    paths = " ".join([(pkg + "/" + s) if pkg else s for s in srcs])
    cmd = "/usr/bin/protoc -I. --cpp_out=$(GENDIR) "
    if grpc:
        cmd += "--grpc_out=$(GENDIR) --plugin=protoc-gen-grpc=/usr/bin/grpc_cpp_plugin "
    cmd += paths
    native.genrule(
        name = name + "_gen",
        srcs = [name + "_files"],
        outs = outs,
        cmd = cmd,
        testonly = testonly,
    )
    native.cc_library(
        name = name,
        srcs = [o for o in outs if o.endswith(".cc")],
        hdrs = [o for o in outs if o.endswith(".h")],
        copts = ["-Wno-unused-parameter"],
        deps = deps + ["@system//:protobuf"] + (["@system//:grpc++"] if grpc else []),
        visibility = visibility,
        testonly = testonly,
    )
