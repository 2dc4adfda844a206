/*
 * convert_config: `lcmon convert-config FILE [-o OUT.yaml]`: upstream's
 * DataLoaderConfig text as lcmon YAML (the converter is convert/).
 */
#ifndef LC_APP_CONVERT_CONFIG_H
#define LC_APP_CONVERT_CONFIG_H

/* argv[0] is "convert-config". Returns the exit status. */
int convert_config_main(int argc, char **argv);

#endif
