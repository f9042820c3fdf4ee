"""Debian system libraries as Bazel cc_library targets, resolved with pkg-config.

Each entry of _LIBS maps a target name in @system// to pkg-config modules.
-I directories are symlinked into the repository so that `includes` can
propagate them; -D flags become `defines`; everything else goes to linkopts.
"""

_LIBS = {
    "absl": [
        "absl_base",
        "absl_flags",
        "absl_flags_parse",
        "absl_hash",
        "absl_random_random",
        "absl_raw_hash_set",
        "absl_status",
        "absl_statusor",
        "absl_str_format_internal",
        "absl_strings",
        "absl_synchronization",
        "absl_time",
    ],
    "protobuf": ["protobuf"],
    "grpc++": ["grpc++"],
    "gtest": ["gtest"],
    "gmock": ["gmock"],
    "gtest_main": ["gmock", "gtest_main"],
    "fuse3": ["fuse3"],
    "liburing": ["liburing"],
    "ibverbs": ["libibverbs", "librdmacm"],
    # Header-only: rangefs-admin's argument parsing and its JSON output.
    "cli11": ["CLI11"],
    "nlohmann_json": ["nlohmann_json"],
    # Google Benchmark, for the micro-benchmarks (*_benchmark targets).
    "benchmark": ["benchmark"],
    # Intel ISA-L (libisal-dev): the Reed-Solomon kernels of ec/isal_codec.
    # Headers in /usr/include/isa-l/ (no -I: included as "isa-l/...").
    "isal": ["libisal"],
    # libnfs (libnfs-dev 4.0): the client library's userspace NFS data path
    # (client_lib/internal/nfs_*). Headers in /usr/include/nfsc/.
    "nfs": ["libnfs"],
    # The rangefs Python extension (python/): CPython's headers (module
    # `python3`, not `python3-embed`: an extension does not link libpython).
    # pybind11's headers (Debian python3-pybind11 -> pybind11-dev) are in
    # /usr/include/pybind11, on the compiler's default path.
    "python3": ["python3"],
}

def _pkg_config(ctx, args):
    res = ctx.execute(["pkg-config"] + args)
    if res.return_code != 0:
        fail("pkg-config %s failed (run deploy/install-deps.sh): %s" % (" ".join(args), res.stderr))
    return res.stdout.strip().split(" ") if res.stdout.strip() else []

def _system_libs_impl(ctx):
    build = ['package(default_visibility = ["//visibility:public"])', ""]
    for name, modules in _LIBS.items():
        includes = []
        defines = []
        linkopts = []
        hdr_dirs = []
        for flag in _pkg_config(ctx, ["--cflags"] + modules):
            if flag.startswith("-I"):
                src = flag[2:]
                dst = "inc_%s_%d" % (name.replace("+", "p"), len(includes))
                ctx.symlink(src, dst)
                includes.append(dst)
                hdr_dirs.append(dst)
            elif flag.startswith("-D"):
                if flag[2:] not in defines:
                    defines.append(flag[2:])
        for flag in _pkg_config(ctx, ["--libs"] + modules):
            if flag:
                linkopts.append(flag)
        build.append("cc_library(")
        build.append('    name = "%s",' % name)
        if hdr_dirs:
            build.append("    hdrs = glob(%s)," % repr(["%s/**/*.h" % d for d in hdr_dirs]))
        build.append("    includes = %s," % repr(includes))
        build.append("    defines = %s," % repr(defines))
        build.append("    linkopts = %s + [\"-lpthread\"]," % repr(linkopts))
        build.append(")")
        build.append("")
    ctx.file("WORKSPACE", 'workspace(name = "%s")\n' % ctx.name)
    ctx.file("BUILD", "\n".join(build))

system_libs = repository_rule(
    implementation = _system_libs_impl,
    local = True,
    environ = ["PKG_CONFIG_PATH"],
)
