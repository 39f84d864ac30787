"""Archive survey: SFrame across a whole repository, its results database and its report."""
