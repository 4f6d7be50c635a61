"""The application suite's own code: a DayTrader-like servlet (VbTrade.java), the JMeter launcher
(VbJMeter.java) and its test plan (plan.jmx); build.py compiles them."""
