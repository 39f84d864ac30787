"""sfcheck inside other tools' runs (rpmlint); nothing here is imported by sfcheck itself."""
