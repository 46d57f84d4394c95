// Tests of this target arrive with their module's issue; this file keeps the target buildable.
