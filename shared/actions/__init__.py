"""Acting through Gmail without write access: search links and the filters file Gmail imports. Pure functions."""
