#include "load.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace pgbench {

Load::Load(int processes) {
  const pid_t parent = getpid();
  for (int i = 0; i < processes; ++i) {
    const pid_t pid = fork();
    if (pid < 0) break;  // fewer than asked; started() says how many
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(0);  // the parent died before prctl
      volatile unsigned long spin = 0;
      for (;;) spin = spin + 1;
    }
    children_.push_back(pid);
  }
}

Load::~Load() {
  for (pid_t pid : children_) kill(pid, SIGKILL);
  for (pid_t pid : children_) waitpid(pid, nullptr, 0);
}

}  // namespace pgbench
