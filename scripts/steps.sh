# Named, timed steps for the scripts (sourced by setup.sh, check.sh, demo.sh and smoke.sh).
#
#   step "cargo test"      # ends the previous step (printing its duration), starts this one
#   ...commands...
#   steps_done             # ends the last step and prints every step's duration
#
# While a step runs, a line every STEP_HEARTBEAT seconds (default 60; 0 turns it off) says
# it is still running, so no stretch of a long build or test run is silent. If the script
# exits early (a failed command under `set -e`), the summary still prints and names the step
# that failed.
if [ -z "${_steps_loaded:-}" ]; then
  _steps_loaded=1
  _step_name=""
  _step_start=0
  _step_heartbeat=""
  _steps_summary=()
  _steps_began=$SECONDS

  # No command substitutions here: bash mishandles them in an EXIT trap after a kill.
  _steps_clock() { printf -v _steps_took '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

  # The heartbeat is disowned at its start: bash neither reports its end nor waits for it.
  _steps_stop_heartbeat() {
    if [ -n "$_step_heartbeat" ]; then
      kill "$_step_heartbeat" 2>/dev/null || true
      _step_heartbeat=""
    fi
  }

  _steps_end() {
    _steps_stop_heartbeat
    if [ -n "$_step_name" ]; then
      _steps_clock $((SECONDS - _step_start))
      printf '<== %s: %s\n' "$_step_name" "$_steps_took" >&2
      local line
      printf -v line '%8s  %s' "$_steps_took" "$_step_name"
      _steps_summary+=("$line")
      _step_name=""
    fi
  }

  step() {
    _steps_end
    _step_name="$*"
    _step_start=$SECONDS
    printf '\n==> %s\n' "$_step_name" >&2
    local every="${STEP_HEARTBEAT:-60}"
    if [ "$every" -gt 0 ]; then
      (
        trap - EXIT
        while sleep "$every"; do
          _steps_clock $((SECONDS - _step_start))
          printf '    ... still running: %s (%s)\n' "$_step_name" "$_steps_took" >&2
        done
      ) &
      _step_heartbeat=$!
      disown "$_step_heartbeat"
    fi
  }

  steps_done() {
    _steps_end
    printf '\n==> steps and their durations\n' >&2
    local line
    for line in "${_steps_summary[@]}"; do printf '%s\n' "$line" >&2; done
    _steps_clock $((SECONDS - _steps_began))
    printf '%8s  total\n' "$_steps_took" >&2
    _steps_summary=()
  }

  _steps_on_exit() {
    local rc=$?
    if [ -n "$_step_name" ]; then
      local failed="$_step_name"
      _steps_stop_heartbeat
      if [ "$rc" -ne 0 ]; then
        _step_name="$failed (FAILED, exit $rc)"
      fi
      steps_done
    fi
    return "$rc"
  }
  trap _steps_on_exit EXIT
fi
