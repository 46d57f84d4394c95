// SerialTimers: built by its own issue; this file keeps the target compiling until then.
