/** Types of plugins.mjs (plain JavaScript, run by the bundling child process). */
interface Plugin {
  name: string;
  setup(build: unknown): void;
}
export declare function replaceModulesPlugin(replacements: readonly { importer: string; request: string; shim: string }[]): Plugin;
export declare const SDK_CLIENT_PACKAGE_JSON: RegExp;
export declare function sdkPackageVersionPlugin(): Plugin;
export declare const SDK_PARTITIONS_FILE: RegExp;
export declare function trimPartitionDescriptions(source: string): { code: string; trimmed: number };
export declare function sdkPartitionsPlugin(): Plugin;
