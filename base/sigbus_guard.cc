#include "base/sigbus_guard.h"

#include <setjmp.h>
#include <signal.h>
#include <ucontext.h>

#include <atomic>
#include <cstring>
#include <mutex>  // NOLINT(build/c++11): std::call_once

namespace rangefs {
namespace {

// The jump back into RunCatchingSigbus of this thread, while one runs.
// Initial-exec: the handler reads it without __tls_get_addr (which may
// allocate) even from a dlopen'ed library (the Python module).
__attribute__((tls_model("initial-exec"))) thread_local sigjmp_buf* t_catch =
    nullptr;

struct sigaction g_previous;

void OnSigbus(int sig, siginfo_t* info, void* context) {
  sigjmp_buf* const to = t_catch;
  // A fault (not a SIGBUS sent by kill or raise) inside a guarded pass.
  if (to != nullptr && info != nullptr && info->si_code != SI_USER &&
      info->si_code != SI_TKILL && info->si_code != SI_QUEUE) {
    t_catch = nullptr;
    // The thread's mask as it was when the fault came: this handler may
    // run inside another one that chained to it with signals blocked
    // (sanitizers, crash reporters), and the jump keeps the mask it finds.
    if (context != nullptr) {
      sigprocmask(SIG_SETMASK, &static_cast<ucontext_t*>(context)->uc_sigmask,
                  nullptr);
    }
    siglongjmp(*to, 1);
  }
  // Not ours: the previous handler's, as if this one were not here.
  if ((g_previous.sa_flags & SA_SIGINFO) != 0) {
    if (g_previous.sa_sigaction != nullptr) {
      g_previous.sa_sigaction(sig, info, context);
      return;
    }
  } else if (g_previous.sa_handler != SIG_DFL &&
             g_previous.sa_handler != SIG_IGN) {
    g_previous.sa_handler(sig);
    return;
  }
  // The default action: die by SIGBUS. A fault repeats when the handler
  // returns (the core shows where it was); a sent signal is sent again.
  struct sigaction dfl;
  memset(&dfl, 0, sizeof(dfl));
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(SIGBUS, &dfl, nullptr);
  if (info == nullptr || info->si_code == SI_USER ||
      info->si_code == SI_TKILL || info->si_code == SI_QUEUE) {
    raise(SIGBUS);
  }
}

void Install() {
  // The previous action is known before this handler can run.
  sigaction(SIGBUS, nullptr, &g_previous);
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_sigaction = OnSigbus;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGBUS, &sa, nullptr);
}

}  // namespace

bool RunCatchingSigbus(absl::FunctionRef<void()> fn) {
  static std::once_flag installed;
  std::call_once(installed, Install);
  sigjmp_buf here;
  sigjmp_buf* const outer = t_catch;
  // savemask 0: no system call; the handler restores the mask itself.
  if (sigsetjmp(here, 0) != 0) {
    t_catch = outer;
    return false;
  }
  t_catch = &here;
  // The pass's memory accesses stay between the two stores.
  std::atomic_signal_fence(std::memory_order_seq_cst);
  fn();
  std::atomic_signal_fence(std::memory_order_seq_cst);
  t_catch = outer;
  return true;
}

}  // namespace rangefs
