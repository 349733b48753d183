/* nosymbol.c - a shared object that is not a plugin: it lacks
 * tsrun_plugin_process. tests/plugins.sh checks the error it gets. */
int tsrun_not_a_plugin(void);
int tsrun_not_a_plugin(void)
{
	return 0;
}
