#include "base/sigbus_guard.h"

#include <setjmp.h>
#include <signal.h>

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
  if (to != nullptr) {
    t_catch = nullptr;
    // SA_NODEFER: SIGBUS is not blocked in the handler, so the jump (which
    // keeps the signal mask) leaves it unblocked.
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
  // The default action (SIG_IGN does not apply to a fault): die by SIGBUS.
  struct sigaction dfl;
  memset(&dfl, 0, sizeof(dfl));
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(SIGBUS, &dfl, nullptr);
  raise(SIGBUS);
}

void Install() {
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_sigaction = OnSigbus;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGBUS, &sa, &g_previous);
}

}  // namespace

bool RunCatchingSigbus(absl::FunctionRef<void()> fn) {
  static std::once_flag installed;
  std::call_once(installed, Install);
  sigjmp_buf here;
  sigjmp_buf* const outer = t_catch;
  // savemask 0: no system call; the handler leaves the mask as it was.
  if (sigsetjmp(here, 0) != 0) {
    t_catch = outer;
    return false;
  }
  t_catch = &here;
  fn();
  t_catch = outer;
  return true;
}

}  // namespace rangefs
