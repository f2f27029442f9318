# Sourced by the benchmark scripts: PYTHON, the python that runs the `chatmem` found on PATH (the interpreter its
# entry script's #! line names: the venv's), so that a script works without the venv active; else $PYTHON as given,
# else python3 (a bare `python` is missing on many systems, Debian's among them).
if [ -z "${PYTHON:-}" ]; then
  PYTHON=python3
  _chatmem=$(command -v chatmem || true)
  if [ -n "$_chatmem" ] && [ -f "$_chatmem" ]; then
    _first=$(head -n 1 "$_chatmem")
    case "$_first" in
      '#!'*python*) PYTHON=${_first#\#!} ;;  # "/venv/bin/python3" or "/usr/bin/env python3"
    esac
  fi
  unset _chatmem _first
fi
