"""Mirrorline's configuration: MM2 properties files in, a typed, traceable model out."""
